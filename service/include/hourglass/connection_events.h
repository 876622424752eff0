// What a listener did with a connection it could not simply serve, so that floods show in the
// metrics (hourglass_connection_events_total{listener, event}).
//
//   options.on_connection_event = [&](ConnectionEvent e) { metrics.CountConnection("http", e); };
//
// Thread-safety: a handler is called from the listener's threads, several at once.
#pragma once

#include <functional>
#include <string_view>

namespace hourglass {

enum class ConnectionEvent {
  kMadeRoom,            // at the cap, an idle connection was closed for a new one
  kRefusedBusy,         // at the cap with every connection busy: the new one was refused
  kRefusedDescriptors,  // out of file descriptors: the new one was refused from the reserve
};

// "made_room", "refused_busy", "refused_descriptors".
std::string_view ConnectionEventName(ConnectionEvent event);

using ConnectionEventHandler = std::function<void(ConnectionEvent)>;

}  // namespace hourglass
