# tools/npm-folder.sh — sourced (not run) by the scripts that install pinned npm packages for tests
# (tools/parity-setup.sh, tools/openai-setup.sh, tools/ai-sdk-setup.sh) into a cache folder outside the
# source tree.
#
#   tag=parity-setup; source tools/npm-folder.sh; open_npm_folder "$dir"
#
# Defines say and die (messages prefixed with $tag, on stderr) and open_npm_folder DIR, which checks
# for Node.js >= 20 and npm, refuses a DIR inside tests/ or tools/, creates DIR, sets $dir to its
# absolute path and holds DIR/.setup.lock for the rest of the script (one setup at a time per folder:
# ctest runs and engineers may share it), and install_pinned SRC, which installs SRC/package.json's
# dependencies at the versions it pins (with SRC/package-lock.json) into $dir, unless every one of them
# is installed there at that version already.

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

# The dependencies of package.json $1 whose installed version in $dir is not the pinned one, as
# "name (installed X, pinned Y)" lines; nothing when all match.
pinned_mismatches() {
    node -e '
const [pj, dir] = process.argv.slice(1), fs = require("fs"), path = require("path");
for (const [name, want] of Object.entries(require(pj).dependencies)) {
  let have = "missing";
  try { have = JSON.parse(fs.readFileSync(path.join(dir, "node_modules", name, "package.json"))).version; } catch {}
  if (have !== want) console.log(`${name} (installed ${have}, pinned ${want})`);
}' "$1/package.json" "$dir"
}

install_pinned() {
    local src="$1" names mismatched
    names="$(node -p 'Object.entries(require(process.argv[1]).dependencies).map(([n, v]) => n + " " + v).join(", ")' "$src/package.json")"
    if [ -z "$(pinned_mismatches "$src")" ]; then
        say "$names already installed in $dir"
        return 0
    fi
    say "installing $names into $dir"
    cp "$src/package.json" "$src/package-lock.json" "$dir/"
    (cd "$dir" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error >&2) || die "npm install failed in $dir"
    mismatched="$(pinned_mismatches "$src")"
    [ -z "$mismatched" ] || die "after npm install in $dir: $mismatched"
    say "done"
}
