#!/usr/bin/env bash
# Build .device/ (git-ignored): what studies/gpu/run.sh needs on a GPU machine that has PyTorch,
# pandas, pyarrow and seaborn but neither Ray nor Optuna, and no network (e.g. an H200 machine
# with Python 3.12, reached with the working tree and at most 64 MiB beside it). Run it once,
# in the checkout whose .venv the tests ran in:
#
#   studies/gpu/bundle.sh [PYTHON_VERSION]        # default 3.12, the GPU machine's python3
#
# It holds: Ray's wheel unpacked without the parts Tune never imports (its Java jars, RLlib,
# Serve, LLM: 79 MB -> ~31 MB as tar.xz), the wheels of the other packages Ray Tune and Optuna
# need that the GPU machine lacks (at the versions installed in .venv, which the tests ran),
# and the CIFAR-10 JPEG copy with its converter (from $FCL_SHARED/data, default ../shared/data).
set -euo pipefail
cd "$(dirname "$0")/../.."
py=${1:-3.12}
dest=.device
shared=${FCL_SHARED:-../shared}
pip=(.venv/bin/python -m pip)
# Ray Tune's and Optuna's requirements that the GPU machine's image does not have
missing=(jsonschema jsonschema-specifications referencing rpds-py tensorboardX pydantic
         pydantic-core annotated-types typing-inspection optuna alembic mako sqlalchemy
         colorlog)
version() { "${pip[@]}" show "$1" 2>/dev/null | awk '/^Version:/ {print $2}'; }
download() {       # NAME==VERSION (or NAME): one binary wheel for the GPU machine's Python
  "${pip[@]}" download -q --no-deps --only-binary=:all: --python-version "$py" \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d "$1" "$2"
}

rm -rf "$dest" && mkdir -p "$dest/wheels" "$dest/cifar10"
for name in "${missing[@]}"; do
  v=$(version "$name"); download "$dest/wheels" "$name${v:+==$v}"
done

ray_version=$(version ray)
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
download "$tmp" "ray==$ray_version"
(cd "$tmp" && unzip -q ray-*.whl && rm -rf ray-*.whl ray/jars ray/rllib ray/serve ray/llm &&
 tar cf - . | xz -T0 -6 > ray.tar.xz)
mv "$tmp/ray.tar.xz" "$dest/ray.tar.xz"

cp "$shared/data/cifar10_jpg_to_torchvision.py" "$shared/data/cifar10_jpg_to_npz.py" \
   "$shared/data/cifar10_jpg_train_test.tar.xz" "$dest/cifar10/"
git describe --always --dirty > "$dest/commit.txt" 2>/dev/null || echo unknown > "$dest/commit.txt"
echo "$dest for Python $py at $(cat "$dest/commit.txt"): $(du -sh "$dest" | cut -f1)" \
     "($(ls "$dest/wheels" | wc -l) wheels, Ray $ray_version)"
