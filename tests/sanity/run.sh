#!/usr/bin/env bash
# Run `ansible-test sanity` offline on a copy of this checkout laid out as
# ansible_collections/ascend/cluster (ansible-test requires that path; a symlink does not do,
# because it resolves the working directory).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
venv_bin=${VENV_BIN:-$repo/.venv/bin}
python_version=$("$venv_bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
pip_version=$("$venv_bin/python" - <<'PY'
# The pip version ansible-test bootstraps into its sanity venvs (get_venv_packages()).
import re, pathlib, ansible_test
src = (pathlib.Path(ansible_test.__file__).parent / "_internal" / "python_requirements.py").read_text()
print(re.search(r"pip='([^']+)'", src).group(1))
PY
)
mkdir -p "$repo/build"
cache=$HOME/.ansible/test/cache
mkdir -p "$cache"
install -m 0644 "$repo/tests/sanity/get_pip_standin.py" "$cache/get_pip_${pip_version//./_}.py"

# A private copy per run, outside this git work tree (inside it, ansible-test would ask git for
# the file list and find the copy ignored), so concurrent runs never collide.
base=$(mktemp -d "${TMPDIR:-/tmp}/ascend-sanity.XXXXXX")
trap 'rm -rf "$base"' EXIT
work=$base/ansible_collections/ascend/cluster
mkdir -p "$work"
# Only what git tracks or would track: no venv, no build output.
(cd "$repo" && git ls-files -co --exclude-standard -z | tar --null --ignore-failed-read -T - -cf -) | tar -xf - -C "$work"
cd "$work"
"$venv_bin/ansible-test" sanity --python "$python_version" --requirements --color no "$@"
