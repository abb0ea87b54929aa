#!/usr/bin/env bash
# The GPU machine copies the tracked tree, at most 64 MiB; since session 30 the tree is
# larger (the matrix archives under models/ are 27 MB and no device script reads them).
#   bash tools/device_tree.sh slim      # before a device call: the archives leave the index
#   bash tools/device_tree.sh restore   # right after it: back in the index, nothing lost
# The files stay on disk; `slim` lists them in .git/info/exclude so they do not travel
# as untracked files either, and `restore` takes them out again. Commit nothing between.
set -eu
cd "$(git rev-parse --show-toplevel)"
list=.git/memest-device-slim
case "${1:-}" in
  slim)
    git ls-files 'models/matrix-*.tar.xz' > "$list"
    mkdir -p .git/info
    xargs -a "$list" git rm -q --cached
    cat "$list" >> .git/info/exclude
    echo "untracked $(wc -l < "$list") archives; tracked tree $(git ls-files -z | xargs -0 du -cb | tail -1 | cut -f1) bytes"
    ;;
  restore)
    [ -f "$list" ] || { echo "device_tree.sh: nothing to restore"; exit 0; }
    xargs -a "$list" git reset -q --
    grep -vxF -f "$list" .git/info/exclude > .git/info/exclude.new || true
    mv .git/info/exclude.new .git/info/exclude
    rm "$list"
    git status --short models/ | head -3
    echo "restored"
    ;;
  *) echo "usage: bash tools/device_tree.sh slim|restore" >&2; exit 2 ;;
esac
