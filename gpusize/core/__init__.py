"""The pure core: values in, values out. No file or network access, no printing, no environment.

`gpu` (GpuSpec), `spec` + `parse` (ModelSpec from a config dict), `params`, `weights`, `kvcache`,
`workload` (what the user asked for, resolved once), `plan` (candidates and the smallest fit) and
`engines/` (one memory model per engine).
"""
