# Sourced by the build scripts: hourglass_configure DIR ARGS... configures DIR with Ninja when
# it is installed (a folder configured earlier keeps its generator), quietly.
hourglass_configure() {
  local dir="$1"
  shift
  local generator=()
  if [[ ! -f "$dir/CMakeCache.txt" ]] && command -v ninja >/dev/null; then
    generator=(-G Ninja)
  fi
  cmake -S . -B "$dir" "${generator[@]}" "$@" >/dev/null
}
