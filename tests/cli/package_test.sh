#!/usr/bin/env bash
# tests/cli/package_test.sh BUILD_DIR VERSION — the Debian package as a user gets it (ctest PackageInstall).
#   cpack -G DEB writes graphrun_VERSION_amd64.deb, which declares the Debian libraries it links;
#   unpacked into a scratch folder (dpkg-deb -x, a fresh root), its graphrun runs from another folder,
#   finds its graphs and model beside itself, and writes what the build tree's graphrun writes.
#   The checkout is out of its reach: graphrun searches a checkout only from that checkout's build
#   tree (graph/data_files.h), and the checks below prove which files it used.
set -euo pipefail
build="$(cd "$1" && pwd)"
version="$2"
scratch="$(mktemp -d "${TMPDIR:-/tmp}/graphrun_package_test.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
fail() { echo "package_test: $*" >&2; exit 1; }

# Packaged into the scratch folder (-B), so the test leaves nothing in the build folder.
(cd "$build" && cpack -G DEB -B "$scratch/pkg" >"$scratch/cpack.log" 2>&1) || { cat "$scratch/cpack.log" >&2; fail "cpack failed"; }
deb="$scratch/pkg/graphrun_${version}_amd64.deb"
[[ -f "$deb" ]] || fail "cpack did not write $deb (it wrote: $(ls "$scratch/pkg"))"

# Its dependencies are Debian's runtime libraries, and each names a package this system has.
depends="$(dpkg-deb -f "$deb" Depends)"
echo "Depends: $depends"
for lib in libc6 libstdc++6 libtbb12 libicu72; do
  [[ ",$depends" == *", $lib "* || ",$depends" == *",$lib "* ]] || fail "Depends does not name $lib: $depends"
done
for pkg in $(echo "$depends" | tr ',' '\n' | sed 's/(.*//; s/|.*//'); do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
    fail "Depends names $pkg, which is not an installed Debian package here"
done

root="$scratch/root"
dpkg-deb -x "$deb" "$root"
for f in usr/bin/graphrun usr/share/graphrun/models/llama.json usr/share/graphrun/models/examples/llama-geglu.json \
         usr/share/graphrun/models/kjv-q8_0.gguf usr/share/doc/graphrun/README.md; do
  [[ -f "$root/$f" ]] || fail "the package lacks /$f"
done
installed="$root/usr/bin/graphrun"
data="$root/usr/share/graphrun"

mkdir "$scratch/elsewhere" && cd "$scratch/elsewhere"
# The installed data folder is the one in use, found beside the executable.
version_text="$(env -u GRAPHRUN_DATA "$installed" --version)"
echo "$version_text"
[[ "$version_text" == "graphrun $version"* ]] || fail "--version does not start with 'graphrun $version'"
grep -qxF "data      $data (beside the executable $installed)" <<<"$version_text" ||
  fail "--version does not name $data as the data folder"

# The command the README gives, then greedily, against the build tree's graphrun on the same model.
env -u GRAPHRUN_DATA "$installed" -p "And God said" -n 16 >"$scratch/out" 2>"$scratch/err" ||
  { cat "$scratch/err" >&2; fail "the installed graphrun -p 'And God said' -n 16 failed"; }
grep -q "^And God said" "$scratch/out" || fail "no text starting with the prompt: $(cat "$scratch/out")"
grep -qF "graphrun: $data/models/kjv-q8_0.gguf: load" "$scratch/err" || fail "not the installed model: $(cat "$scratch/err")"
cat "$scratch/out"
env -u GRAPHRUN_DATA "$installed" -p "And God said" -n 16 --temp 0 >"$scratch/greedy" 2>/dev/null
env -u GRAPHRUN_DATA "$build/graphrun" -p "And God said" -n 16 --temp 0 >"$scratch/greedy.build" 2>/dev/null
cmp -s "$scratch/greedy" "$scratch/greedy.build" ||
  fail "installed and build-tree greedy text differ: '$(cat "$scratch/greedy")' vs '$(cat "$scratch/greedy.build")'"

# A copy of the binary with no data beside it finds nothing, and names every place it looked.
mkdir -p "$scratch/lonely/bin" && cp "$installed" "$scratch/lonely/bin/"
if env -u GRAPHRUN_DATA "$scratch/lonely/bin/graphrun" -p "And God said" -n 1 >/dev/null 2>"$scratch/err"; then
  fail "a graphrun with no data folder ran"
fi
grep -qF "cannot find models/kjv-q8_0.gguf: looked for $scratch/lonely/share/graphrun/models/kjv-q8_0.gguf (beside the executable $scratch/lonely/bin/graphrun)" "$scratch/err" ||
  fail "unclear error without a data folder: $(cat "$scratch/err")"
grep -qF "GRAPHRUN_DATA" "$scratch/err" || fail "the error does not mention GRAPHRUN_DATA: $(cat "$scratch/err")"
# $GRAPHRUN_DATA gives it one, and overrides the folder beside an installed executable.
GRAPHRUN_DATA="$data" "$scratch/lonely/bin/graphrun" -p "And God said" -n 16 --temp 0 >"$scratch/greedy.override" 2>/dev/null
cmp -s "$scratch/greedy" "$scratch/greedy.override" || fail "GRAPHRUN_DATA=$data gave other text"
mkdir "$scratch/empty"
if GRAPHRUN_DATA="$scratch/empty" "$installed" -p "And God said" -n 1 >/dev/null 2>"$scratch/err"; then
  fail "GRAPHRUN_DATA=$scratch/empty did not override the installed data folder"
fi
grep -qF "$scratch/empty/models/kjv-q8_0.gguf (\$GRAPHRUN_DATA)" "$scratch/err" || fail "unclear override error: $(cat "$scratch/err")"
echo "package_test: $(basename "$deb") installs and runs"
