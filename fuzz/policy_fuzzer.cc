// Fuzzes the policy file loader with arbitrary YAML: a policy or an error naming the problem,
// never a crash, a hang or an uncaught exception.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.h"
#include "hourglass/policy_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hourglass;
  const std::string_view yaml(reinterpret_cast<const char*>(data), size);
  Result<PolicyFile> file = PolicyFile::Parse(yaml, "fuzz.yaml");
  if (!file.ok()) FUZZ_CHECK(!file.error().message().empty());
  return 0;
}
