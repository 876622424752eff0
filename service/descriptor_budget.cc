#include "hourglass/descriptor_budget.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>

namespace hourglass {

size_t RaiseOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  // RLIM_INFINITY is not a count; a process cannot open more than this anyway.
  return static_cast<size_t>(std::min<rlim_t>(limit.rlim_cur, 1u << 30));
}

DescriptorPlan FitConnections(size_t limit, const DescriptorNeeds& needs) {
  DescriptorPlan plan;
  plan.http = needs.http;
  plan.grpc = needs.grpc;
  const size_t own = kDescriptorOverhead + kDescriptorsPerIoThread * needs.io_threads;
  const size_t fixed = needs.store + own;
  const size_t wanted = needs.http + GrpcDescriptors(needs.grpc);
  const size_t listeners = needs.grpc > 0 ? 1 + GrpcDescriptors(1) : 1;
  if (limit < fixed + listeners) {
    plan.fits = false;
    plan.warnings.push_back(
        fmt::format("the open file limit ({}) leaves no room for client connections beside the "
                    "store's {} and {} of the process's own: raise it (ulimit -n, or LimitNOFILE= "
                    "in a systemd unit) to at least {}",
                    limit, needs.store, own, fixed + wanted));
    return plan;
  }
  if (fixed + wanted <= limit) return plan;
  const size_t room = limit - fixed;
  // In proportion to the descriptors asked, each cap at least 1.
  plan.http = std::max<size_t>(1, room * needs.http / wanted);
  if (needs.grpc > 0) {
    const size_t grpc_room = room > plan.http ? room - plan.http : 0;
    plan.grpc = std::max<size_t>(1, grpc_room * 8 / 9);  // cap + cap / 8 fits
    while (plan.grpc > 1 && GrpcDescriptors(plan.grpc) > grpc_room) --plan.grpc;
    plan.http =
        std::max<size_t>(1, std::min(plan.http, room - std::min(room, GrpcDescriptors(plan.grpc))));
  }
  const auto lowered = [&](std::string_view flag, size_t from, size_t to) {
    plan.warnings.push_back(fmt::format(
        "{} lowered from {} to {}: the open file limit is {}, and the store keeps {} and the "
        "process {} for itself; raise the limit (ulimit -n, or LimitNOFILE= in a systemd unit) "
        "to at least {} to keep {}",
        flag, from, to, limit, needs.store, own, fixed + wanted, from));
  };
  if (plan.http < needs.http) lowered("--max-connections", needs.http, plan.http);
  if (plan.grpc < needs.grpc) lowered("--grpc-max-connections", needs.grpc, plan.grpc);
  return plan;
}

}  // namespace hourglass
