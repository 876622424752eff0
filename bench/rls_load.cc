// rls_load: a load driver for Envoy's RateLimitService/ShouldRateLimit, built from the upstream
// definitions like an Envoy would be. It keeps --concurrency requests in flight on one HTTP/2
// connection for --seconds, each asking for one client address of the real log at random under
// every --key, and prints one JSON line: requests, seconds, rps, p50_us, p99_us, max_us,
// over_limit, errors, driver_cpu_us (its own CPU per request). --value asks for one value (one
// client) every time instead; --prefix makes every value new to the servers (a fresh set of
// clients per run).
// --client h2 (the default) speaks gRPC's wire protocol itself on nghttp2, on one thread, so that
// the driver's own CPU per request is small beside the servers'; --client grpc uses grpc++'s
// callback API (one channel), as a C++ Envoy extension would.
//   rls_load --target 127.0.0.1:8081 --domain bench --key per_second --key per_day --log LOG
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"

namespace {

namespace rls = envoy::service::ratelimit::v3;
using Clock = std::chrono::steady_clock;

std::vector<std::string> ClientAddresses(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> addresses;
  for (std::string line; std::getline(in, line);) {
    const std::string address = line.substr(0, line.find(' '));
    if (!address.empty()) addresses.push_back(address);
  }
  return addresses;
}

// `request` asks for `value` under every key, one descriptor each, in `domain`.
void Fill(rls::RateLimitRequest& request, const std::string& domain,
          const std::vector<std::string>& keys, const std::string& value) {
  request.Clear();
  request.set_domain(domain);
  for (const std::string& key : keys) {
    auto* entry = request.add_descriptors()->add_entries();
    entry->set_key(key);
    entry->set_value(value);
  }
}

struct Totals {
  std::mutex mu;
  std::condition_variable idle;
  int in_flight = 0;
  std::vector<int64_t> latencies_us;
  int64_t over_limit = 0;
  int64_t errors = 0;
};

// One request slot: asks, and on each answer records it and asks again until the deadline.
// Thread-safety: a slot has one call in flight at a time; Totals is guarded by its mutex.
class Slot {
 public:
  Slot(rls::RateLimitService::Stub* stub, const std::vector<std::string>* addresses,
       const std::string* domain, const std::vector<std::string>* keys, Clock::time_point deadline,
       uint32_t seed, Totals* totals)
      : stub_(stub),
        addresses_(addresses),
        domain_(domain),
        keys_(keys),
        deadline_(deadline),
        random_(seed),
        totals_(totals) {}

  void Ask() {
    Fill(request_, *domain_, *keys_, (*addresses_)[random_() % addresses_->size()]);
    context_ = std::make_unique<grpc::ClientContext>();
    start_ = Clock::now();
    stub_->async()->ShouldRateLimit(context_.get(), &request_, &response_,
                                    [this](grpc::Status status) { Answered(status); });
  }

 private:
  void Answered(const grpc::Status& status) {
    const auto now = Clock::now();
    const int64_t us = std::chrono::duration_cast<std::chrono::microseconds>(now - start_).count();
    {
      std::lock_guard lock(totals_->mu);
      totals_->latencies_us.push_back(us);
      if (!status.ok()) ++totals_->errors;
      if (status.ok() && response_.overall_code() != rls::RateLimitResponse::OK) {
        ++totals_->over_limit;
      }
      if (now >= deadline_) {
        if (--totals_->in_flight == 0) totals_->idle.notify_all();
        return;
      }
    }
    Ask();
  }

  rls::RateLimitService::Stub* stub_;
  const std::vector<std::string>* addresses_;
  const std::string* domain_;
  const std::vector<std::string>* keys_;
  Clock::time_point deadline_;
  std::minstd_rand random_;
  Totals* totals_;
  std::unique_ptr<grpc::ClientContext> context_;
  rls::RateLimitRequest request_;
  rls::RateLimitResponse response_;
  Clock::time_point start_;
};

// gRPC over one HTTP/2 connection, on this thread: --concurrency streams in flight, each replaced
// by a new call when it closes, until the deadline.
class H2Driver {
 public:
  H2Driver(const std::vector<std::string>* addresses, const std::string* domain,
           const std::vector<std::string>* keys, Clock::time_point deadline, Totals* totals)
      : addresses_(addresses), domain_(domain), keys_(keys), deadline_(deadline), totals_(totals) {}
  ~H2Driver() {
    if (session_ != nullptr) nghttp2_session_del(session_);
    if (fd_ >= 0) close(fd_);
  }

  // Connects to HOST:PORT (an IPv4 address); false with a message on stderr when it cannot.
  bool Connect(const std::string& target) {
    const size_t colon = target.rfind(':');
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(std::stoi(target.substr(colon + 1))));
    if (colon == std::string::npos ||
        inet_pton(AF_INET, target.substr(0, colon).c_str(), &address.sin_addr) != 1) {
      std::cerr << "rls_load: --target " << target << " is not IPv4-ADDRESS:PORT\n";
      return false;
    }
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      std::cerr << "rls_load: cannot connect to " << target << "\n";
      return false;
    }
    const int on = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    authority_ = target;
    nghttp2_session_callbacks* callbacks = nullptr;
    nghttp2_session_callbacks_new(&callbacks);
    nghttp2_session_callbacks_set_on_header_callback(callbacks, OnHeader);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, OnData);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, OnClose);
    nghttp2_session_client_new(&session_, callbacks, this);
    nghttp2_session_callbacks_del(callbacks);
    const nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20}};
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, 1);
    return true;
  }

  // Runs `concurrency` calls at a time until the deadline and all are answered.
  void Run(int concurrency) {
    for (int i = 0; i < concurrency; ++i) Ask();
    std::vector<uint8_t> in(64 * 1024);
    while (!streams_.empty()) {
      if (!Send()) break;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 5000) != 1) break;
      const ssize_t n = read(fd_, in.data(), in.size());
      if (n <= 0 || nghttp2_session_mem_recv(session_, in.data(), static_cast<size_t>(n)) < 0) {
        break;
      }
    }
    totals_->errors += static_cast<int64_t>(streams_.size());  // never answered
  }

 private:
  struct Stream {
    std::string request;  // length-prefixed
    size_t sent = 0;
    std::string response;
    int grpc_status = -1;
    Clock::time_point start;
  };

  void Ask() {
    rls::RateLimitRequest request;
    Fill(request, *domain_, *keys_, (*addresses_)[random_() % addresses_->size()]);
    auto stream = std::make_unique<Stream>();
    const std::string message = request.SerializeAsString();
    const auto size = static_cast<uint32_t>(message.size());
    stream->request = {'\0', static_cast<char>(size >> 24), static_cast<char>(size >> 16),
                       static_cast<char>(size >> 8), static_cast<char>(size)};
    stream->request += message;
    stream->start = Clock::now();
    const nghttp2_nv headers[] = {
        Header(":method", "POST"),
        Header(":scheme", "http"),
        Header(":path", "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"),
        Header(":authority", authority_),
        Header("content-type", "application/grpc"),
        Header("te", "trailers"),
    };
    nghttp2_data_provider data{};
    data.source.ptr = stream.get();
    data.read_callback = ReadRequest;
    const int32_t id =
        nghttp2_submit_request(session_, nullptr, headers, std::size(headers), &data, nullptr);
    if (id < 0) {
      ++totals_->errors;
      return;
    }
    streams_[id] = std::move(stream);
  }

  // Writes every frame nghttp2 has to send, in one write.
  bool Send() {
    out_.clear();
    for (;;) {
      const uint8_t* data = nullptr;
      const ssize_t n = nghttp2_session_mem_send(session_, &data);
      if (n < 0) return false;
      if (n == 0) break;
      out_.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
    }
    for (size_t done = 0; done < out_.size();) {
      const ssize_t w = write(fd_, out_.data() + done, out_.size() - done);
      if (w <= 0) return false;
      done += static_cast<size_t>(w);
    }
    return true;
  }

  static nghttp2_nv Header(std::string_view name, std::string_view value) {
    return {const_cast<uint8_t*>(reinterpret_cast<const uint8_t*>(name.data())),
            const_cast<uint8_t*>(reinterpret_cast<const uint8_t*>(value.data())), name.size(),
            value.size(), NGHTTP2_NV_FLAG_NONE};
  }
  static ssize_t ReadRequest(nghttp2_session*, int32_t, uint8_t* buffer, size_t length,
                             uint32_t* flags, nghttp2_data_source* source, void*) {
    auto* s = static_cast<Stream*>(source->ptr);
    const size_t n = std::min(length, s->request.size() - s->sent);
    std::copy_n(s->request.data() + s->sent, n, buffer);
    s->sent += n;
    if (s->sent == s->request.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
  }
  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                      size_t name_length, const uint8_t* value, size_t value_length, uint8_t,
                      void* user) {
    auto* self = static_cast<H2Driver*>(user);
    auto it = self->streams_.find(frame->hd.stream_id);
    if (it == self->streams_.end()) return 0;
    if (std::string_view(reinterpret_cast<const char*>(name), name_length) == "grpc-status") {
      it->second->grpc_status =
          std::atoi(std::string(reinterpret_cast<const char*>(value), value_length).c_str());
    }
    return 0;
  }
  static int OnData(nghttp2_session*, uint8_t, int32_t id, const uint8_t* data, size_t length,
                    void* user) {
    auto* self = static_cast<H2Driver*>(user);
    auto it = self->streams_.find(id);
    if (it != self->streams_.end()) {
      it->second->response.append(reinterpret_cast<const char*>(data), length);
    }
    return 0;
  }
  static int OnClose(nghttp2_session*, int32_t id, uint32_t, void* user) {
    auto* self = static_cast<H2Driver*>(user);
    auto it = self->streams_.find(id);
    if (it == self->streams_.end()) return 0;
    std::unique_ptr<Stream> s = std::move(it->second);
    self->streams_.erase(it);
    const auto now = Clock::now();
    self->totals_->latencies_us.push_back(
        std::chrono::duration_cast<std::chrono::microseconds>(now - s->start).count());
    rls::RateLimitResponse response;
    if (s->grpc_status != 0 || s->response.size() < 5 ||
        !response.ParseFromArray(s->response.data() + 5,
                                 static_cast<int>(s->response.size() - 5))) {
      ++self->totals_->errors;
    } else if (response.overall_code() != rls::RateLimitResponse::OK) {
      ++self->totals_->over_limit;
    }
    if (now < self->deadline_) self->Ask();
    return 0;
  }

  const std::vector<std::string>* addresses_;
  const std::string* domain_;
  const std::vector<std::string>* keys_;
  Clock::time_point deadline_;
  Totals* totals_;  // this thread's alone
  std::minstd_rand random_{1};
  int fd_ = -1;
  nghttp2_session* session_ = nullptr;
  std::string authority_;
  std::string out_;  // frames being written
  std::unordered_map<int32_t, std::unique_ptr<Stream>> streams_;
};

// This process's user + system CPU time so far, in microseconds.
int64_t CpuMicros() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1'000'000 + usage.ru_utime.tv_usec +
         usage.ru_stime.tv_usec;
}

int64_t Percentile(std::vector<int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  const size_t i = std::min(sorted.size() - 1,
                            static_cast<size_t>(p / 100 * static_cast<double>(sorted.size())));
  return sorted[i];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Drives ShouldRateLimit with concurrent requests; prints one JSON line."};
  std::string target = "127.0.0.1:8081";
  std::string domain = "bench";
  std::vector<std::string> keys;
  std::string log;
  int concurrency = 64;
  double seconds = 10;
  app.add_option("--target", target, "the service's gRPC HOST:PORT");
  app.add_option("--domain", domain, "the request's domain");
  app.add_option("--key", keys, "a descriptor key; each request has one descriptor per key")
      ->required();
  std::string value;
  auto* log_option =
      app.add_option("--log", log, "an Apache access log; its client addresses are the values")
          ->check(CLI::ExistingFile);
  app.add_option("--value", value, "one value for every request (one client) instead of --log's")
      ->excludes(log_option);
  std::string prefix;
  app.add_option("--prefix", prefix,
                 "prepended to every value: clients that no earlier run has counted");
  app.add_option("--concurrency", concurrency, "requests in flight")->check(CLI::Range(1, 4096));
  app.add_option("--seconds", seconds, "how long to ask")->check(CLI::Range(0.1, 3600.0));
  std::string client = "h2";
  app.add_option("--client", client, "h2: gRPC on nghttp2, one thread; grpc: grpc++'s callback API")
      ->check(CLI::IsMember({"h2", "grpc"}))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::vector<std::string> addresses =
      value.empty() ? ClientAddresses(log) : std::vector<std::string>{value};
  for (std::string& address : addresses) address.insert(0, prefix);
  if (addresses.empty()) {
    std::cerr << "rls_load: no client addresses in " << log << " (give --log or --value)\n";
    return 2;
  }
  Totals totals;
  const int64_t cpu_before = CpuMicros();
  const auto start = Clock::now();
  const auto deadline =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::unique_ptr<rls::RateLimitService::Stub> stub;
  std::vector<std::unique_ptr<Slot>> slots;
  if (client == "h2") {
    H2Driver driver(&addresses, &domain, &keys, deadline, &totals);
    if (!driver.Connect(target)) return 2;
    driver.Run(concurrency);
  } else {
    auto channel = grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
    stub = rls::RateLimitService::NewStub(channel);
    totals.in_flight = concurrency;
    for (int i = 0; i < concurrency; ++i) {
      slots.push_back(std::make_unique<Slot>(stub.get(), &addresses, &domain, &keys, deadline,
                                             static_cast<uint32_t>(i + 1), &totals));
    }
    for (auto& slot : slots) slot->Ask();
    std::unique_lock lock(totals.mu);
    totals.idle.wait(lock, [&] { return totals.in_flight == 0; });
  }
  const int64_t cpu_us = CpuMicros() - cpu_before;
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  std::sort(totals.latencies_us.begin(), totals.latencies_us.end());
  const auto n = static_cast<int64_t>(totals.latencies_us.size());
  std::cout << "{\"requests\":" << n << ",\"seconds\":" << elapsed
            << ",\"rps\":" << static_cast<double>(n) / elapsed
            << ",\"p50_us\":" << Percentile(totals.latencies_us, 50)
            << ",\"p99_us\":" << Percentile(totals.latencies_us, 99)
            << ",\"max_us\":" << (n == 0 ? 0 : totals.latencies_us.back())
            << ",\"over_limit\":" << totals.over_limit << ",\"errors\":" << totals.errors
            << ",\"driver_cpu_us\":"
            << (n == 0 ? 0.0 : static_cast<double>(cpu_us) / static_cast<double>(n)) << "}\n";
  return totals.errors == 0 ? 0 : 1;
}
