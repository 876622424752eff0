#!/usr/bin/env bash
# docs/reference.md names every option each command's --help lists and every metric the service
# defines, so the reference cannot fall behind the program.
#   reference_test.sh HOURGLASS_BINARY SOURCE_DIR
set -euo pipefail
bin="$1"
src="$2"
doc="$src/docs/reference.md"
missing=()
# The help read whole first: awk leaving early would end `--help` by SIGPIPE, failing the pipe.
help=$("$bin" --help)
commands=$(awk '/^Subcommands:/ {on = 1; next} on && !NF {exit} on {print $1}' <<<"$help")
for command in "" $commands "policy validate"; do
  # shellcheck disable=SC2086
  for option in $("$bin" $command --help | grep -oE '^ +(-[a-z],)?--?[a-z][a-z-]*' |
    sed -E 's/^ +(-[a-z],)?//' | sort -u); do
    [[ "$option" == "--help" ]] && continue
    grep -qF "\`$option" "$doc" || missing+=("option ${command:-(global)} $option")
  done
done
for metric in $(grep -rhoE 'Name\("hourglass_[a-z_]+"\)' "$src/service" "$src/rls" |
  sed -E 's/Name\("(.*)"\)/\1/' | sort -u); do
  grep -qF "\`$metric\`" "$doc" || missing+=("metric $metric")
done
if ((${#missing[@]} > 0)); then
  printf 'docs/reference.md lacks %s\n' "${missing[@]}" >&2
  exit 1
fi
echo "docs/reference.md names every option and metric"
