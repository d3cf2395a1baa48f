#!/usr/bin/env bash
# Builds (and with --push, pushes) the image of every service in deploy/services.json, and the
# operator CLI's image, from deploy/Dockerfile with the repository root as the context. A service
# added to the list is built here without touching this script.
#
#   deploy/build-images.sh [--dry-run] [--push] [--registry <registry/path>] [--tag <tag>]
#
#   --registry  where the images go (default registry.example.com/affiliate, the placeholder of
#               k8s/base/kustomization.yaml): <registry>/<service>:<tag>
#   --tag       the release's tag (default: the commit, git rev-parse --short HEAD)
#   --dry-run   print the docker commands, one a line, and run nothing
#   --push      push each image after building it
set -euo pipefail
cd "$(dirname "$0")/.."

registry="registry.example.com/affiliate"
tag=""
dry_run=false
push=false
while [ $# -gt 0 ]; do
  case "$1" in
    --registry) registry="${2:?--registry needs a value}"; shift 2 ;;
    --tag) tag="${2:?--tag needs a value}"; shift 2 ;;
    --dry-run) dry_run=true; shift ;;
    --push) push=true; shift ;;
    -h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-images: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$tag" ]; then
  tag="$(git rev-parse --short HEAD 2>/dev/null)" || { echo "build-images: not a git checkout: pass --tag" >&2; exit 2; }
fi

# One line per image: <name> <docker build arguments naming the service>. Any node reads JSON.
images="$(node -e '
  const list = JSON.parse(require("node:fs").readFileSync("deploy/services.json", "utf8"));
  for (const service of list.services) console.log(`${service.name} --build-arg SERVICE=${service.name} --build-arg PORT=${service.port}`);
  const cli = list.operatorCli;
  console.log(`${cli.name} --target ${cli.name} --build-arg SERVICE=${cli.name}`);
')"

run() {
  if $dry_run; then echo "$*"; else (set -x; "$@"); fi
}

while read -r name arguments; do
  image="$registry/$name:$tag"
  # shellcheck disable=SC2086 # the build arguments are words on purpose
  run docker build -f deploy/Dockerfile $arguments -t "$image" .
  if $push; then run docker push "$image"; fi
done <<<"$images"
