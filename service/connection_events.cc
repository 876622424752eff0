#include "hourglass/connection_events.h"

namespace hourglass {

std::string_view ConnectionEventName(ConnectionEvent event) {
  switch (event) {
    case ConnectionEvent::kMadeRoom:
      return "made_room";
    case ConnectionEvent::kRefusedBusy:
      return "refused_busy";
    case ConnectionEvent::kRefusedDescriptors:
      return "refused_descriptors";
  }
  return "unknown";
}

}  // namespace hourglass
