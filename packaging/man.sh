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
hourglass \- exact sliding-window rate limits over memcached, Redis or LMDB: CLI, HTTP service, Envoy RLS
.SH SYNOPSIS
.B hourglass
[\fIglobal options\fR] \fICOMMAND\fR [\fIoptions\fR]
.SH DESCRIPTION
hourglass counts hits per event and feature in second, minute and hour buckets in memcached,
Redis or a local LMDB file and
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
# The help read whole first: awk leaving early would end `--help` by SIGPIPE, failing the pipe.
help=$("$bin" --help)
for command in $(awk '/^Subcommands:/ {on = 1; next} on && !NF {exit} on {print $1}' <<<"$help"); do
  echo ".SS hourglass $command"
  echo ".nf"
  "$bin" "$command" --help | escape
  echo ".fi"
done
# The policy format and the environment, from the reference (docs/reference.md), as roff.
python3 - "$(dirname "$0")/../docs/reference.md" <<'PY'
import re, sys
text = open(sys.argv[1]).read()

def roff(s):
    s = re.sub(r"`([^`]*)`", r"\\fB\1\\fR", s.replace("\\", "\\e"))
    s = s.replace("\\|", "|").replace("-", "\\-")
    return s

def section(title):
    start = text.index("\n## " + title)
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else None]

def table_rows(block):
    rows = [l for l in block.splitlines() if l.startswith("| ") and not l.startswith("| ---")]
    return [[c.strip() for c in re.split(r"(?<!\\)\|", r)[1:-1]] for r in rows[1:]]

policy = section("Policy files")
print(".SH POLICY FILE")
print("A YAML file of events, each with its limits (\\fBhourglass policy validate FILE\\fR explains one):")
print(".PP\n.nf")
yaml = policy[policy.index("```yaml") + 7:policy.index("```", policy.index("```yaml") + 7)]
for line in yaml.strip("\n").splitlines():
    line = line.replace("\\", "\\e")
    print(("\\&" + line) if line.startswith((".", "'")) else line)
print(".fi")
for key, values, default, meaning in (r[:4] for r in table_rows(policy.split("```", 2)[2])):
    print(".TP\n.B " + roff(key).replace("\\fB", "").replace("\\fR", ""))
    print(roff(f"{values}; default {default}: {meaning}" if default else f"{values}: {meaning}"))
print(".SH ENVIRONMENT")
print("Each command also reads \\fI/etc/default/hourglass\\fR when it exists (\\-\\-env\\-file): the")
print("variables the environment does not set are taken from it.")
for name, read_by, meaning in (r[:3] for r in table_rows(section("Environment"))):
    print(".TP\n.B " + name.strip("`"))
    print(roff(f"{meaning} ({read_by})"))
PY
cat <<'TAIL'
.SH FILES
.TP
.I /etc/hourglass/policy.yaml
the limits of \fBhourglass serve\fR as the Debian package runs it (systemctl reload hourglass)
.TP
.I /etc/default/hourglass
the store, its servers, the policy and further options of the service (HOURGLASS_SERVE_ARGS);
every command of the CLI reads it too
.TP
.I /usr/share/doc/hourglass/
the README and its pages (docs/: the reference, the HTTP API in openapi.yaml, operations),
example policies, Prometheus alerting rules and a Grafana dashboard (examples/monitoring)
.SH SEE ALSO
.BR memcached (1),
.BR redis-server (1),
.BR nginx (8),
.BR systemctl (1)
TAIL
