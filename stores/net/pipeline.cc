#include "hourglass/net/pipeline.h"

namespace hourglass::net {

Error MaybeApplied(const Error& error, bool writes) {
  if (!writes) return error;
  return Error(error.code(), error.message() +
                                 " (the writes were sent: they may have been applied, now or when "
                                 "the server resumes)");
}

}  // namespace hourglass::net
