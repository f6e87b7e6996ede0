# SPDX-License-Identifier: MIT
# Sourced by scripts/gpu-check --call 1: chapters no step file names, found in chapters/
# rather than assumed, each get a generic run: 2 towers on one GPU, with --probe and
# --save-params where their --help lists them. None today; a new chapter appears here, and
# call 1's plan then needs room for it (the dry run refuses a plan over the call's limit).
# Chapters with no CUDA path have no device work and are left out: 11_mesh plans, and
# runs its composed meshes on the host backend only (one simulated device per rank; CUDA
# with ncclCommSplit is still to come, issue 40), so its tests are the host's. When it
# runs on GPUs, it needs a step file of its own.
host_only=(11_mesh)
new_chapters=()
for dir in chapters/[0-9][0-9]_*/; do
  name=$(basename "$dir")
  [[ " ${host_only[*]} " == *" $name "* ]] && continue
  grep -qs -- "\$bin/$name " scripts/gpu-bench.d/*.sh || new_chapters+=("$name")
done

if [ ${#new_chapters[@]} -gt 0 ]; then
  step "chapters no step names: ${new_chapters[*]}" $((12 * ${#new_chapters[@]})) && {
    for name in "${new_chapters[@]}"; do
      program=$bin/$name
      flags=()
      if [ "$dry_run" = 1 ]; then
        echo "  (--probe and --save-params below only where $name --help lists them)"
        flags=(--probe --save-params "$(params "$name")")
      else
        has_flag "$program" --probe && flags+=(--probe)
        has_flag "$program" --save-params && flags+=(--save-params "$(params "$name")")
      fi
      run_bench "Chapter ${name%%_*} ($name): 2 towers on one GPU" 12 \
        "$program" --backend cuda --devices 1 --towers-per-device 2 --steps 6 --batch-size 32 \
        --log-every 3 "${flags[@]}"
      [[ " ${flags[*]} " == *" --probe "* ]] && expect rendezvous=met
    done
  }
fi
