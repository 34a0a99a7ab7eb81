# tools/npm-folder.sh — sourced (not run) by the scripts that install pinned npm packages for tests
# (tools/parity-setup.sh, tools/openai-setup.sh) into a cache folder outside the source tree.
#
#   tag=parity-setup; source tools/npm-folder.sh; open_npm_folder "$dir"
#
# Defines say and die (messages prefixed with $tag, on stderr) and open_npm_folder DIR, which checks
# for Node.js >= 20 and npm, refuses a DIR inside tests/ or tools/, creates DIR, sets $dir to its
# absolute path and holds DIR/.setup.lock for the rest of the script (one setup at a time per folder:
# ctest runs and engineers may share it).

say() { echo "$tag: $*" >&2; }
die() {
    say "error: $*"
    exit 1
}

open_npm_folder() {
    command -v node >/dev/null || die "node not found; install Node.js >= 20 and npm (apt-get install nodejs npm)"
    command -v npm >/dev/null || die "npm not found; install it (apt-get install npm)"
    local node_major
    node_major="$(node -p 'process.versions.node.split(".")[0]')"
    [ "$node_major" -ge 20 ] || die "node $(node --version) is too old; the pinned packages need Node.js >= 20"
    dir="$(realpath -m "$1")"
    case "$dir/" in
    "$src_dir/tests/"* | "$src_dir/tools/"*) die "install folder $dir is inside the source tree; pick a build or cache folder" ;;
    esac
    mkdir -p "$dir"
    if command -v flock >/dev/null; then
        exec 9>"$dir/.setup.lock"
        flock 9
    fi
}
