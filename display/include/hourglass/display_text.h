// Text that came from clients or files (events, features, policy files), made safe to show to a
// person: on a terminal, in a table, in a log line.
//
// A feature is any byte string, so one may carry bytes that move the cursor, recolour or clear a
// terminal (ESC sequences), end a line and start a forged one (CR, LF), or reorder what follows
// (bidirectional controls such as U+202E). DisplayText spells every such byte or character out,
// visibly and unambiguously, and passes the rest of well-formed UTF-8 (an e-mail address in any
// script) as it is:
//
//   DisplayText("line\r\nInjected: 1 \x1b[31mred")  ->  line\r\nInjected: 1 \x1b[31mred (as text)
//   DisplayText("ann\xe2\x80\xaegpj.exe")              ->  ann\u{202e}gpj.exe
//   DisplayText("zoë")                                  ->  zoë
//
// Spelled out: C0 controls, DEL and bytes that are not well-formed UTF-8 as \xNN (\t, \n, \r as
// such); C1 controls, invisible format characters (U+200B-U+200F, U+2028-U+202E, U+2060-U+2064,
// U+2066-U+2069, U+061C, U+FEFF) as \u{NNNN}; the backslash as \\, so that nothing shown can be
// mistaken for an escape.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace hourglass {

std::string DisplayText(std::string_view text);

// DisplayText of at most `max_bytes` of output: when longer, cut at a character or escape (never
// inside one) and ended with "..." within `max_bytes` (`max_bytes` >= 3).
std::string DisplayText(std::string_view text, size_t max_bytes);

}  // namespace hourglass
