// Fuzzes GET /v1/top's query with arbitrary request targets: a JSON answer or an error naming
// the problem, never a crash, whatever the bytes, over a summary holding hostile features.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "hourglass/admin_views.h"

namespace {

hourglass::PolicySource Policies() {
  const std::string spec = "5/m";
  return *hourglass::PolicySource::FromLimits({&spec, 1});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hourglass;
  static const PolicySource policies = Policies();
  static RecentTop* top = [] {
    auto* t = new RecentTop(4);
    const Instant now = FromUnix(1'800'000'000);
    for (const char* feature : {"a", "\xff\xfe", "\"quoted\"\n", ""}) {
      t->Record("signup", feature, 3, false, now);
    }
    t->Record("signup", std::string(600, 'x'), 1, true, now);
    return t;
  }();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const Result<RequestTarget> target = ParseTarget(text);
  if (!target.ok()) return 0;
  const Result<std::string> view = TopView(*top, policies, target->params, FromUnix(1'800'000'030));
  if (view.ok()) {
    FUZZ_CHECK(nlohmann::json::parse(*view, nullptr, false).is_object());
  } else {
    FUZZ_CHECK(!view.error().message().empty());
  }
  return 0;
}
