#!/bin/sh
# make demo: `gpumem info` and the hello example, on the GPU when there is
# one, else on the simulator, saying which.
top=${1:-.}
backend=${GPUMEM_BACKEND:-auto}
if [ "$backend" = sim ]; then
    echo "== running on the simulator (GPUMEM_BACKEND=sim)"
elif why=$(GPUMEM_BACKEND=$backend "$top/tools/gpumem" info 2>&1 >/dev/null); then
    echo "== running on the GPU (GPUMEM_BACKEND=$backend)"
else
    echo "== no usable GPU here: ${why#gpumem: }"
    echo "== running on the simulator instead (GPUMEM_BACKEND=sim)"
    backend=sim
fi
export GPUMEM_BACKEND=$backend
"$top/tools/gpumem" info && echo && "$top/examples/hello"
