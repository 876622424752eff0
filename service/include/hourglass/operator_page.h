// The operator's page of `hourglass serve` (GET /ui): one HTML document with its script and
// style inline (no external asset, nothing fetched from elsewhere), showing who is limited now
// per event and until when, a feature's timeline (per second, minute and hour, with its limits),
// the policy in force and the store's health. The page holds no data itself: it reads the
// service's own endpoints (/v1/policy, /v1/top, /v1/inspect, a peek through /v1/check, /metrics,
// /readyz), so the admin calls among them stay guarded; when they answer 401 the page shows a
// form for the admin token, kept for the browser tab and sent as "Authorization: Bearer".
//
// Thread-safety: a constant.
#pragma once

#include <string_view>

namespace hourglass {

std::string_view OperatorPageHtml();

// The Content-Security-Policy the page is served with: its own inline script and style, requests
// to this service only.
inline constexpr std::string_view kOperatorPagePolicy =
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'";

}  // namespace hourglass
