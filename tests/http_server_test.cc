// HttpServer with real sockets: a slow or idle client is cut off and never holds the others, at
// the connection cap a new client takes an idle one's place (503 only when all are busy or no
// descriptor is left), asynchronous handlers answer from other threads, and Stop() waits
// for an answer still on its way.
#include "hourglass/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "descriptors_taken.h"
#include "hourglass/descriptor_budget.h"
#include "silent_connections.h"

namespace hourglass {
namespace {

using std::chrono::milliseconds;

// A blocking loopback client on raw sockets: what a slow or hostile client can do.
class RawClient {
 public:
  // With `connect_now` false, the socket exists and Connect() connects it later (connecting
  // takes no new descriptor).
  explicit RawClient(uint16_t port, bool connect_now = true)
      : fd_(socket(AF_INET, SOCK_STREAM, 0)), port_(port) {
    if (connect_now) Connect();
  }
  bool Connect() {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port_);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    return connected_;
  }
  int fd() const { return fd_; }
  ~RawClient() { close(fd_); }
  bool connected() const { return connected_; }
  // False once the server has closed the connection.
  bool Send(const std::string& bytes) {
    return send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }
  // Everything until the server closes the connection, or until `wait` passes (then closed()
  // is false).
  std::string ReadUntilClosed(milliseconds wait = milliseconds{5000}) {
    std::string got;
    const auto deadline = std::chrono::steady_clock::now() + wait;
    closed_ = false;
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      char buffer[4096];
      const ssize_t n = recv(fd_, buffer, sizeof buffer, 0);
      if (n <= 0) {
        closed_ = true;
        break;
      }
      got.append(buffer, static_cast<size_t>(n));
    }
    return got;
  }
  // One request and its answer on a keep-alive connection (the answer's bytes as they come); with
  // `request` empty, the answer to one sent before.
  std::string Exchange(const std::string& request, milliseconds wait = milliseconds{5000}) {
    if (!Send(request)) return "";
    std::string got;
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (std::chrono::steady_clock::now() < deadline &&
           got.find("\r\n\r\n") == std::string::npos) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      char buffer[4096];
      const ssize_t n = recv(fd_, buffer, sizeof buffer, 0);
      if (n <= 0) break;
      got.append(buffer, static_cast<size_t>(n));
    }
    return got;
  }
  bool closed() const { return closed_; }

 private:
  int fd_;
  uint16_t port_;
  bool connected_ = false;
  bool closed_ = false;
};

const std::string kGet = "GET /x HTTP/1.1\r\nHost: t\r\n\r\n";

class HttpServerTest : public ::testing::Test {
 protected:
  void Start(HttpServerOptions options, AsyncHttpHandler handler) {
    options.port = 0;
    options.on_connection_event = [this](ConnectionEvent e) {
      std::lock_guard lock(events_mu_);
      ++events_[e];
    };
    Result<std::unique_ptr<HttpServer>> server =
        HttpServer::Create(std::move(options), std::move(handler));
    ASSERT_TRUE(server.ok()) << server.error().ToString();
    server_ = std::move(*server);
    runner_ = std::thread([this] { server_->Run(); });
  }
  void Start(HttpServerOptions options) {
    Start(std::move(options), [](HttpRequest, HttpResponder respond) {
      HttpResponse res(HttpStatus::kOk);
      res.body() = "ok";
      respond(std::move(res));
    });
  }
  void TearDown() override {
    if (server_ == nullptr) return;
    server_->Stop();
    runner_.join();
  }
  uint16_t port() const { return server_->port(); }

  // How often the server told of `event` so far.
  int Told(ConnectionEvent event) {
    std::lock_guard lock(events_mu_);
    return events_[event];
  }

  std::unique_ptr<HttpServer> server_;
  std::thread runner_;
  std::mutex events_mu_;
  std::map<ConnectionEvent, int> events_;  // guarded by events_mu_
};

TEST_F(HttpServerTest, AnIdleConnectionIsClosedAfterTheIdleTimeout) {
  HttpServerOptions options;
  options.idle_timeout = milliseconds{300};
  Start(options);
  RawClient client(port());
  ASSERT_TRUE(client.connected());
  EXPECT_NE(client.Exchange(kGet).find("200 OK"), std::string::npos);
  client.ReadUntilClosed();
  EXPECT_TRUE(client.closed()) << "the keep-alive connection stayed open past the idle timeout";
}

TEST_F(HttpServerTest, ADrippingRequestIsCutOffAndHoldsNobodyElse) {
  HttpServerOptions options;
  options.threads = 1;
  options.request_timeout = milliseconds{500};
  Start(options);
  RawClient slow(port());
  ASSERT_TRUE(slow.connected());
  // A header that never ends, one byte at a time.
  std::atomic<bool> cut_off{false};
  std::thread drip([&] {
    slow.Send("GET /x HTTP/1.1\r\nHost: t\r\nX-Slow: ");
    for (int i = 0; i < 100 && !cut_off; ++i) {
      if (!slow.Send("a")) cut_off = true;
      std::this_thread::sleep_for(milliseconds{50});
    }
  });
  // Meanwhile another client is answered, on the server's only thread.
  RawClient other(port());
  EXPECT_NE(other.Exchange(kGet).find("200 OK"), std::string::npos);
  slow.ReadUntilClosed();
  EXPECT_TRUE(slow.closed()) << "a request dripping for 5 s was not cut off";
  cut_off = true;
  drip.join();
}

// Until closed(), keeps every request waiting for an answer: connections stay busy.
class HeldAnswers {
 public:
  AsyncHttpHandler Handler() {
    return [this](HttpRequest, HttpResponder respond) {
      std::lock_guard lock(mu_);
      held_.push_back(std::move(respond));
    };
  }
  size_t held() {
    std::lock_guard lock(mu_);
    return held_.size();
  }
  void AnswerAll() {
    std::lock_guard lock(mu_);
    for (HttpResponder& r : held_) r(HttpResponse(HttpStatus::kOk));
    held_.clear();
  }

 private:
  std::mutex mu_;
  std::vector<HttpResponder> held_;
};

TEST_F(HttpServerTest, WhenEveryConnectionIsBusyANewOneIsAnswered503AndClosed) {
  HttpServerOptions options;
  options.max_connections = 2;
  HeldAnswers answers;
  Start(options, answers.Handler());
  RawClient first(port()), second(port());
  ASSERT_TRUE(first.Send(kGet) && second.Send(kGet));
  for (int i = 0; i < 250 && answers.held() < 2; ++i) std::this_thread::sleep_for(milliseconds{20});
  ASSERT_EQ(answers.held(), 2u);
  RawClient third(port());
  const std::string refused = third.ReadUntilClosed();
  EXPECT_TRUE(third.closed());
  EXPECT_EQ(refused.rfind("HTTP/1.1 503 Service Unavailable\r\n", 0), 0u) << refused;
  EXPECT_NE(refused.find("Retry-After: 1"), std::string::npos) << refused;
  EXPECT_EQ(Told(ConnectionEvent::kRefusedBusy), 1);
  EXPECT_EQ(Told(ConnectionEvent::kMadeRoom), 0);
  // Once answered, the two are idle: a new connection takes the place of one of them.
  answers.AnswerAll();
  EXPECT_NE(first.Exchange("").find("200 OK"), std::string::npos);  // its answer, once written
  RawClient fourth(port());
  ASSERT_TRUE(fourth.Send(kGet));
  for (int i = 0; i < 250 && answers.held() < 1; ++i) std::this_thread::sleep_for(milliseconds{20});
  EXPECT_EQ(answers.held(), 1u) << "the fourth connection was not served";
  EXPECT_EQ(Told(ConnectionEvent::kMadeRoom), 1);
  answers.AnswerAll();
}

TEST_F(HttpServerTest, AtTheCapANewConnectionTakesThePlaceOfTheOneIdleLongest) {
  HttpServerOptions options;
  options.max_connections = 2;
  Start(options);
  RawClient oldest(port());
  ASSERT_NE(oldest.Exchange(kGet).find("200 OK"), std::string::npos);
  std::this_thread::sleep_for(milliseconds{50});
  RawClient recent(port());
  ASSERT_NE(recent.Exchange(kGet).find("200 OK"), std::string::npos);
  RawClient newcomer(port());
  EXPECT_NE(newcomer.Exchange(kGet).find("200 OK"), std::string::npos);
  oldest.ReadUntilClosed(milliseconds{2000});
  EXPECT_TRUE(oldest.closed()) << "the connection idle longest was kept";
  EXPECT_NE(recent.Exchange(kGet).find("200 OK"), std::string::npos)
      << "the connection idle for less time was closed";
  // The server counts a connection out once its session ends, shortly after the client sees EOF.
  for (int i = 0; i < 100 && server_->connections() > 2; ++i) {
    std::this_thread::sleep_for(milliseconds{20});
  }
  EXPECT_LE(server_->connections(), 2u);
  EXPECT_EQ(Told(ConnectionEvent::kMadeRoom), 1);
  EXPECT_EQ(Told(ConnectionEvent::kRefusedBusy), 0);
}

// A flood of connections that each send one byte and wait cannot hold every slot: at the cap, the
// connection that has waited on its client longest (a partial request included) makes room, and
// every client that sends its request whole is answered. One being answered is never closed.
TEST_F(HttpServerTest, PartialRequestsCannotLockOutClientsThatSendWholeOnes) {
  HttpServerOptions options;
  options.max_connections = 8;
  options.request_timeout = std::chrono::seconds{30};  // longer than the test: no timeout helps
  HeldAnswers held;
  std::atomic<bool> hold{true};
  Start(options, [&](HttpRequest request, HttpResponder respond) {
    if (request.target() == "/held" && hold) return held.Handler()(std::move(request), respond);
    respond(HttpResponse(HttpStatus::kOk));
  });
  RawClient busy(port());  // being answered all along
  ASSERT_TRUE(busy.Send("GET /held HTTP/1.1\r\nHost: t\r\n\r\n"));
  for (int i = 0; i < 100 && held.held() == 0; ++i) std::this_thread::sleep_for(milliseconds{10});
  ASSERT_EQ(held.held(), 1u);
  std::deque<RawClient> flood;
  int answered = 0;
  for (int round = 0; round < 40; ++round) {
    for (int i = 0; i < 5; ++i) {
      ASSERT_TRUE(flood.emplace_back(port()).Send("G"));
    }
    RawClient client(port());
    if (client.Exchange(kGet).rfind("HTTP/1.1 200", 0) == 0) ++answered;
  }
  EXPECT_EQ(answered, 40) << "clients sending whole requests were refused during the flood";
  EXPECT_EQ(Told(ConnectionEvent::kRefusedBusy), 0);
  EXPECT_GT(Told(ConnectionEvent::kMadeRoom), 150);
  hold = false;
  held.AnswerAll();
  EXPECT_NE(busy.Exchange("").find("200 OK"), std::string::npos)
      << "the connection being answered was closed to make room";
}

TEST_F(HttpServerTest, IdleConnectionsCannotLockOutANewClient) {
  HttpServerOptions options;
  options.max_connections = 50;
  Start(options);
  // Connections that never send a byte, more than the cap: each new one takes an older one's
  // place, and a real client still gets its answer.
  std::vector<std::unique_ptr<RawClient>> idle;
  for (int i = 0; i < 120; ++i) idle.push_back(std::make_unique<RawClient>(port()));
  RawClient client(port());
  EXPECT_NE(client.Exchange(kGet).find("200 OK"), std::string::npos);
  for (int i = 0; i < 100 && server_->connections() > 50; ++i) {
    std::this_thread::sleep_for(milliseconds{20});
  }
  EXPECT_LE(server_->connections(), 50u);
}

// Each connection that makes room closes one on another thread; however far the closing lags
// behind a burst, at most kHttpMaxLeaving are on their way out beside the cap (accepting waits),
// so a burst cannot take the process's descriptors, and a real client is still served.
TEST_F(HttpServerTest, ABurstOfConnectionsStaysWithinTheCapAndThoseLeaving) {
  HttpServerOptions options;
  options.max_connections = 16;
  Start(options);
  std::vector<std::unique_ptr<testing::SilentConnections>> bursts;
  for (int i = 0; i < 5; ++i) {
    bursts.push_back(std::make_unique<testing::SilentConnections>(port(), 200));
    ASSERT_EQ(bursts.back()->opened(), 200u);
  }
  for (int i = 0; i < 500 && Told(ConnectionEvent::kMadeRoom) < 1000 - 16; ++i) {
    std::this_thread::sleep_for(milliseconds{20});
  }
  EXPECT_EQ(Told(ConnectionEvent::kMadeRoom), 1000 - 16);
  EXPECT_EQ(Told(ConnectionEvent::kRefusedBusy), 0);
  EXPECT_LE(server_->most_connections(), 16u + kHttpMaxLeaving)
      << "connections open at once (closing ones included), over a cap of 16";
  RawClient client(port());
  EXPECT_NE(client.Exchange(kGet).find("200 OK"), std::string::npos) << "a real client locked out";
}

TEST_F(HttpServerTest, ANewConnectionThatSendsNothingIsClosedAfterTheFirstByteTimeout) {
  HttpServerOptions options;
  options.first_byte_timeout = milliseconds{300};
  options.idle_timeout = milliseconds{60'000};
  Start(options);
  RawClient silent(port());
  silent.ReadUntilClosed(milliseconds{3000});
  EXPECT_TRUE(silent.closed()) << "a connection that sent nothing was kept past 3 s";
  // A connection kept alive after an answer waits the (longer) idle timeout instead.
  RawClient kept(port());
  ASSERT_NE(kept.Exchange(kGet).find("200 OK"), std::string::npos);
  kept.ReadUntilClosed(milliseconds{900});
  EXPECT_FALSE(kept.closed());
  EXPECT_NE(kept.Exchange(kGet).find("200 OK"), std::string::npos);
}

TEST_F(HttpServerTest, AClientThatReadsNoAnswerIsClosedAfterTheRequestTimeout) {
  // An answer far larger than loopback's socket buffers: its write waits on the client.
  const std::string big(64 << 20, 'x');
  HttpServerOptions options;
  options.request_timeout = milliseconds{300};
  Start(options, [&big](HttpRequest, HttpResponder respond) {
    HttpResponse res(HttpStatus::kOk);
    res.body() = big;
    respond(std::move(res));
  });
  RawClient client(port());
  ASSERT_TRUE(client.Send(kGet));
  // The client reads nothing until the server has let the connection go (or 10 s have passed).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{10};
  bool seen = false;
  while (std::chrono::steady_clock::now() < deadline) {
    const size_t open = server_->connections();
    if (seen && open == 0) break;
    seen = seen || open > 0;
    std::this_thread::sleep_for(milliseconds{10});
  }
  EXPECT_EQ(server_->connections(), 0u) << "a connection whose answer is not read was kept 10 s";
  const std::string got = client.ReadUntilClosed();
  EXPECT_TRUE(client.closed());
  EXPECT_LT(got.size(), big.size()) << "the answer went whole to a client that read nothing";
}

TEST_F(HttpServerTest, OutOfDescriptorsANewConnectionIsAnswered503NotLeftWaiting) {
  Start(HttpServerOptions{});
  // The client's socket exists before the process runs out of descriptors; connecting needs none.
  RawClient client(port(), /*connect_now=*/false);
  ASSERT_GE(client.fd(), 0);
  testing::DescriptorsTaken taken(client.fd());
  ASSERT_TRUE(taken.exhausted());
  ASSERT_TRUE(client.Connect());
  const std::string got = client.ReadUntilClosed();
  EXPECT_EQ(got.rfind("HTTP/1.1 503 Service Unavailable\r\n", 0), 0u) << got;
  // Told once the refusal is written, which the client may read first.
  for (int i = 0; i < 100 && Told(ConnectionEvent::kRefusedDescriptors) == 0; ++i) {
    std::this_thread::sleep_for(milliseconds{10});
  }
  // Still out of descriptors and no one else connecting: the listener waits for a connection
  // rather than failing accept() over and over (Linux fails it before looking at the queue).
  std::this_thread::sleep_for(milliseconds{100});
  EXPECT_EQ(Told(ConnectionEvent::kRefusedDescriptors), 1) << "one connection came, one refused";
  taken.Release();
  // Descriptors back: served again.
  RawClient after(port());
  ASSERT_TRUE(after.connected()) << strerror(errno);
  const std::string served = after.Exchange(kGet);
  EXPECT_NE(served.find("200 OK"), std::string::npos) << served;
  EXPECT_EQ(Told(ConnectionEvent::kRefusedDescriptors), 1);
}

TEST_F(HttpServerTest, AsyncAnswersComeFromOtherThreadsAndStopWaitsForThem) {
  std::promise<HttpResponder> pending;
  std::atomic<int> calls{0};
  Start(HttpServerOptions{}, [&](HttpRequest request, HttpResponder respond) {
    if (++calls == 1) return pending.set_value(std::move(respond));  // answered later
    HttpResponse res(HttpStatus::kOk);
    res.body() = std::string(request.target());
    respond(std::move(res));
  });
  RawClient waiting(port());
  ASSERT_TRUE(waiting.Send(kGet));
  HttpResponder later = pending.get_future().get();
  // Another connection is answered while the first waits.
  RawClient other(port());
  EXPECT_NE(other.Exchange(kGet).find("200 OK"), std::string::npos);
  server_->Stop();  // the waiting request is still answered, then the server stops
  std::thread answer([&] {
    std::this_thread::sleep_for(milliseconds{200});
    later.Later([] {
      HttpResponse res(HttpStatus::kAccepted);
      res.body() = "built on the connection's thread";
      return res;
    });
    later(HttpResponse(HttpStatus::kInternalServerError));  // a second answer is ignored
  });
  const std::string got = waiting.ReadUntilClosed();
  answer.join();
  runner_.join();
  server_.reset();
  EXPECT_EQ(got.rfind("HTTP/1.1 202 Accepted\r\n", 0), 0u) << got;
  EXPECT_NE(got.find("Connection: close"), std::string::npos) << got;
  EXPECT_NE(got.find("built on the connection's thread"), std::string::npos) << got;
  EXPECT_EQ(got.find("500"), std::string::npos) << got;
}

TEST_F(HttpServerTest, AHandlerThatThrowsIsAnswered500AndTheServerGoesOn) {
  std::atomic<int> calls{0};
  Start(HttpServerOptions{}, [&](HttpRequest, HttpResponder respond) {
    if (++calls == 1) throw std::runtime_error("boom");
    respond(HttpResponse(HttpStatus::kOk));
  });
  RawClient client(port());
  EXPECT_EQ(client.Exchange(kGet).rfind("HTTP/1.1 500", 0), 0u);
  RawClient again(port());
  EXPECT_EQ(again.Exchange(kGet).rfind("HTTP/1.1 200", 0), 0u);
}

// A body whose length two readers could frame differently (RFC 9112 6.1, 6.3) is refused with a
// 400 and the connection closed: nothing reaches the handler, and no bytes after it are read as a
// second request.
TEST_F(HttpServerTest, BlockingWorkHoldsNoOtherConnectionOfItsIOThread) {
  HttpServerOptions options;
  options.threads = 1;  // one I/O thread: every connection is on it
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> blocked{0};
  Start(options, [&](HttpRequest request, HttpResponder respond) {
    if (request.target() == "/block") {
      return respond.Blocking([&, released](HttpResponder answer) {
        ++blocked;
        released.wait();  // as a read of a frozen store would
        answer(HttpResponse(HttpStatus::kAccepted));
      });
    }
    if (request.target() == "/throw") {
      return respond.Blocking([](HttpResponder) { throw std::runtime_error("boom"); });
    }
    respond(HttpResponse(HttpStatus::kOk));
  });
  RawClient waiting(port());
  ASSERT_TRUE(waiting.Send("GET /block HTTP/1.1\r\nHost: t\r\n\r\n"));
  for (int i = 0; i < 250 && blocked == 0; ++i) std::this_thread::sleep_for(milliseconds{20});
  ASSERT_EQ(blocked, 1);
  // While the blocking work waits, the same I/O thread answers other connections.
  RawClient other(port());
  EXPECT_EQ(other.Exchange(kGet).rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
  release.set_value();
  EXPECT_EQ(waiting.Exchange("").rfind("HTTP/1.1 202 Accepted\r\n", 0), 0u);
  // Blocking work that throws is answered 500 (after the first: one thread blocks here).
  RawClient throwing(port());
  EXPECT_EQ(throwing.Exchange("GET /throw HTTP/1.1\r\nHost: t\r\n\r\n").rfind("HTTP/1.1 500", 0),
            0u);
}

TEST_F(HttpServerTest, AResponseIsFramedByItsStatusAndRequestAndAFieldCannotEndTheHeader) {
  Start(HttpServerOptions{}, [](HttpRequest request, HttpResponder respond) {
    if (request.target() == "/empty") return respond(HttpResponse(HttpStatus::kNoContent));
    HttpResponse res(HttpStatus::kOk, "body");
    res.Set("X-Reason", "a\r\nInjected: 1");  // as a store's error text could carry
    respond(std::move(res));
  });
  RawClient client(port());
  const std::string got = client.Exchange(kGet);
  EXPECT_EQ(got.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << got;
  EXPECT_NE(got.find("\r\nX-Reason: a  Injected: 1\r\n"), std::string::npos) << got;
  EXPECT_EQ(got.find("\r\nInjected:"), std::string::npos) << got;
  EXPECT_NE(got.find("\r\nContent-Length: 4\r\n"), std::string::npos) << got;
  EXPECT_EQ(got.find("Connection:"), std::string::npos) << "HTTP/1.1 keeps alive by default";
  RawClient second(port());  // a connection each: an answer's body is not read by Exchange
  const std::string empty = second.Exchange("GET /empty HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_EQ(empty.rfind("HTTP/1.1 204 No Content\r\n", 0), 0u) << empty;
  EXPECT_EQ(empty.find("Content-Length"), std::string::npos) << empty;
  // A HEAD is told the length without the content, and the next request on the connection is
  // read as a request, not as the rest of the first answer.
  RawClient head(port());
  const std::string told = head.Exchange("HEAD /x HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_NE(told.find("\r\nContent-Length: 4\r\n\r\n"), std::string::npos) << told;
  EXPECT_EQ(told.find("body"), std::string::npos) << told;
  const std::string next = head.Exchange(kGet);
  EXPECT_EQ(next.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << next;
  // An HTTP/1.0 client that asks to keep the connection is told it is kept.
  RawClient third(port());
  const std::string old = third.Exchange("GET /x HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  EXPECT_EQ(old.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << old;
  EXPECT_NE(old.find("\r\nConnection: keep-alive\r\n"), std::string::npos) << old;
}

TEST_F(HttpServerTest, ARequestIsReadWholeHoweverItArrivesAndPipelinedOnesInTurn) {
  std::atomic<int> calls{0};
  Start(HttpServerOptions{}, [&](HttpRequest request, HttpResponder respond) {
    ++calls;
    respond(HttpResponse(HttpStatus::kOk, std::string(request.target()) + ":" + request.body()));
  });
  const auto post = [](const std::string& target, const std::string& body, bool close = false) {
    return "POST " + target +
           " HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(body.size()) +
           (close ? "\r\nConnection: close" : "") + "\r\n\r\n" + body;
  };
  // In pieces: the header cut in its middle, the body in two parts. Whether the pieces arrive
  // together or apart, the request is the same.
  const std::string whole = post("/pieces", "first half|second half", /*close=*/true);
  RawClient pieces(port());
  size_t from = 0;
  for (const size_t cut :
       {size_t{10}, whole.find("\r\n\r\n") + 4, whole.size() - 7, whole.size()}) {
    ASSERT_TRUE(pieces.Send(whole.substr(from, cut - from)));
    from = cut;
    std::this_thread::sleep_for(milliseconds{20});  // apart, most likely; together is fine too
  }
  const std::string got = pieces.ReadUntilClosed();
  EXPECT_NE(got.find("\r\n\r\n/pieces:first half|second half"), std::string::npos) << got;
  // Three requests in one write: three answers, in turn, then the close the last asked for.
  RawClient pipelined(port());
  ASSERT_TRUE(pipelined.Send(post("/1", "a") + post("/2", "bb") + post("/3", "ccc", true)));
  const std::string answers = pipelined.ReadUntilClosed();
  EXPECT_TRUE(pipelined.closed());
  const size_t one = answers.find("/1:a"), two = answers.find("/2:bb"),
               three = answers.find("/3:ccc");
  ASSERT_NE(three, std::string::npos) << answers;
  EXPECT_LT(one, two) << answers;
  EXPECT_LT(two, three) << answers;
  // A client gone before its body is whole is answered nothing, and no handler ran for it.
  const int before = calls;
  RawClient gone(port());
  ASSERT_TRUE(gone.Send(post("/gone", "never all of it").substr(0, 60)));
  shutdown(gone.fd(), SHUT_WR);
  EXPECT_EQ(gone.ReadUntilClosed(), "");
  EXPECT_TRUE(gone.closed());
  EXPECT_EQ(calls, before);
  // A header over the limit, sent in pieces, is still refused.
  RawClient big(port());
  ASSERT_TRUE(big.Send("GET /x HTTP/1.1\r\nHost: t\r\nX-Big: "));
  for (int i = 0; i < 9 && big.Send(std::string(1024, 'a')); ++i) {
  }
  EXPECT_NE(big.ReadUntilClosed().find("431"), std::string::npos);
}

TEST_F(HttpServerTest, ARequestWhoseFramingCanBeReadTwoWaysIsRefusedAndClosed) {
  std::atomic<int> calls{0};
  Start(HttpServerOptions{}, [&](HttpRequest, HttpResponder respond) {
    ++calls;
    respond(HttpResponse(HttpStatus::kOk));
  });
  const std::string smuggled = "GET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n";
  for (const std::string& framing :
       {std::string("Transfer-Encoding: xchunked\r\nContent-Length: 2\r\n\r\nhi"),
        std::string("Transfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n2\r\nhi\r\n0\r\n\r\n"),
        std::string("Transfer-Encoding: gzip\r\n\r\n")}) {
    RawClient client(port());
    ASSERT_TRUE(client.Send("POST /x HTTP/1.1\r\nHost: t\r\n" + framing + smuggled));
    const std::string answer = client.ReadUntilClosed();
    EXPECT_EQ(answer.rfind("HTTP/1.1 400", 0), 0u) << framing << "\n" << answer;
    EXPECT_TRUE(client.closed()) << framing;
    EXPECT_EQ(answer.find("HTTP/1.1 200"), std::string::npos) << framing << "\n" << answer;
  }
  EXPECT_EQ(calls.load(), 0);
  RawClient plain(port());
  EXPECT_EQ(plain
                .Exchange("POST /x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                          "2\r\nhi\r\n0\r\n\r\n")
                .rfind("HTTP/1.1 200", 0),
            0u)
      << "a chunked body alone is fine";
  EXPECT_EQ(calls.load(), 1);
}

}  // namespace
}  // namespace hourglass
