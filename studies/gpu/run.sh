#!/usr/bin/env bash
# On the GPU machine, from the repository root of a working tree that carries the .device/
# that studies/gpu/bundle.sh built: unpack it, write CIFAR-10 into data/, run every study at
# cifar10-gpu one after another, and after each one pack all finished studies' Parquet into
# $OUT/results.tgz, so that a run cut short still returns every study it finished:
#
#   OUT=out/gpu bash studies/gpu/run.sh
#
# then, in the checkout the studies are kept in: tar xzf results.tgz -C results/gpu (and see
# $OUT/log.txt).
# FCL_PRESET, FCL_STUDIES, FCL_TRIAL (the trial resources), FCL_BUNDLE and FCL_WORK (the
# scratch folder) override the defaults below.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-out/gpu}
preset=${FCL_PRESET:-cifar10-gpu}
trial=${FCL_TRIAL:---cpus-per-trial 2 --gpus-per-trial 0.125}     # 8 trials share the GPU
bundle=${FCL_BUNDLE:-.device}
work=${FCL_WORK:-/tmp/fcl-gpu}
site=$work/site
results=$work/results                     # this run's studies only
rm -rf "$results" && mkdir -p "$out" "$site"
export PYTHONPATH="$site:$PWD" PYTHONUNBUFFERED=1
if [ -d "$bundle" ]; then          # else: the Python environment as it is (a test, a laptop)
  tar xJf "$bundle/ray.tar.xz" -C "$site" &&
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target "$site" "$bundle"/wheels/*.whl || exit 1
  [ -d data/cifar-10-batches-py ] ||
    python3 "$bundle/cifar10/cifar10_jpg_to_torchvision.py" data || exit 1
fi
studies=${FCL_STUDIES:-$(python3 -c "import sys; sys.path.insert(0, 'studies')
import run_all; print(*run_all.STUDIES)")}
{ echo "commit $(cat "$bundle/commit.txt" 2>/dev/null || git describe --always --dirty)" \
       "preset $preset; $trial"
  nvidia-smi -L 2>&1; nproc; python3 -c "import torch, ray; print('torch', torch.__version__,
'cuda', torch.cuda.is_available(), 'ray', ray.__version__)"; } > "$out/machine.txt" 2>&1
worst=0
for s in $studies; do
  start=$(date +%s)
  # shellcheck disable=SC2086
  python3 studies/run_all.py --only "$s" --preset "$preset" --results "$results" --fresh \
    $trial >> "$out/log.txt" 2>&1
  code=$?; worst=$((code > worst ? code : worst))
  echo "$s exit $code $(( $(date +%s) - start )) s" | tee -a "$out/machine.txt"
  tar czf "$out/results.tgz.tmp" -C "$results" --exclude .tune --exclude '*.db' . &&
    mv "$out/results.tgz.tmp" "$out/results.tgz"
done
exit $worst
