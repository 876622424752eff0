// Loopback ports for the servers tests start, and who holds them.
//
// Thread-safety: these functions may be called from any thread.
#pragma once

#include <sys/types.h>

namespace hourglass::testing {

// A port on 127.0.0.1 nobody listens on right now, below the kernel's ephemeral range (so no
// client connection of another test takes it before it is bound); 0 if none was found. Another
// test may still bind it first: a server started on it is ours only if ListensOn says so.
int FreeLoopbackPort();

// A socket of this process listening on 127.0.0.1:`port`, or -1 if it cannot bind there. The
// caller closes it.
int ListenOnLoopback(int port);

// Whether process `pid` holds a socket listening on TCP port `port` of 127.0.0.1 (or of any
// address), as /proc/net/tcp and /proc/PID/fd say. False if either cannot be read.
bool ListensOn(pid_t pid, int port);

}  // namespace hourglass::testing
