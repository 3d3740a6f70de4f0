"""Design-space sweeps: a grid of scenarios from a sweep file, run on local processes or on Ray, as a table.

    from flopcast.sweep import spec, runner, executors
    sweep = spec.read("examples/codesign.yaml")
    executors.run(tasks, fn, engine="ray")      # the executor, for any independent pieces

`flopcast.api.sweep` (and `flopcast sweep FILE`) wire it to the forecast; docs/sweep.md has the file format.
"""
