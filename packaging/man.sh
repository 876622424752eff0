#!/usr/bin/env bash
# Writes hourglass(1) to stdout from the built binary's own --help texts, so the manual page says
# exactly what the program does: the global options, then each command's options and examples.
#   man.sh BUILD/cli/hourglass > hourglass.1
set -euo pipefail
bin="$1"
# roff: backslashes escaped, lines starting with . or ' protected.
# The usage line names the binary by its path; the manual names it by its name.
escape() {
  sed -e "s|Usage: [^ ]*hourglass|Usage: hourglass|" -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"
}
version=$("$bin" --version | awk '{print $2}')
cat <<HEAD
.TH HOURGLASS 1 "" "hourglass $version" "User Commands"
.SH NAME
hourglass \- exact sliding-window rate limits over memcached: CLI, HTTP service, Envoy RLS
.SH SYNOPSIS
.B hourglass
[\fIglobal options\fR] \fICOMMAND\fR [\fIoptions\fR]
.SH DESCRIPTION
hourglass counts hits per event and feature in second, minute and hour buckets in memcached and
answers how many lie in the last second, minute, hour or day exactly, to enforce limits such as
2/s, 5/m, 10/h, 100/d. The service (\fBhourglass serve\fR) answers apps over HTTP, nginx through
auth_request and Envoy over gRPC. Exit codes: 0 ok, 1 denied (check), 2 bad usage or input,
3 store (or service) unreachable, 4 cannot listen.
.PP
.nf
HEAD
"$bin" --help | escape
echo ".fi"
echo ".SH COMMANDS"
for command in $("$bin" --help | awk '/^Subcommands:/ {on = 1; next} on && !NF {exit} on {print $1}'); do
  echo ".SS hourglass $command"
  echo ".nf"
  "$bin" "$command" --help | escape
  echo ".fi"
done
cat <<'TAIL'
.SH FILES
.TP
.I /etc/hourglass/policy.yaml
the limits of \fBhourglass serve\fR as the Debian package runs it (systemctl reload hourglass)
.TP
.I /etc/default/hourglass
HOURGLASS_SERVERS and further options of the service
.SH ENVIRONMENT
.TP
.B HOURGLASS_SERVERS
memcached servers, host:port[,host:port...] (the \-\-servers option)
.TP
.B HOURGLASS_LAYOUT
how memcached keeps buckets: counters or packed (the \-\-layout option)
.SH SEE ALSO
.BR memcached (1),
.BR nginx (8),
.BR systemctl (1)
TAIL
