"""Running units of lake work on Dask: its local scheduler (threads, processes, or one
thread in process for one worker) or an existing `distributed` cluster.

Results come back one by one as units finish (`on_result(i, result)`, in this process),
so the manifest commits each source as soon as it is complete: a run killed midway keeps
what it finished.
"""


def run(fn, specs, on_result, workers=1, mode="threads", scheduler=None):
    """Call fn(spec) for every spec on Dask; `mode`: threads | processes (local scheduler)."""
    if not specs:
        return
    if scheduler is not None:
        _distributed(fn, specs, on_result, scheduler)
        return
    import dask
    from dask.callbacks import Callback

    keys = {}
    tasks = []
    for i, spec in enumerate(specs):
        key = f"logb-unit-{i}"
        keys[key] = i
        tasks.append(dask.delayed(fn, pure=False)(spec, dask_key_name=key))

    class _Done(Callback):
        def _posttask(self, key, result, dsk, state, worker_id):
            if key in keys:
                on_result(keys[key], result)

    local = "sync" if workers <= 1 else mode
    with _Done():
        dask.compute(*tasks, scheduler=local, num_workers=max(workers, 1))


def _distributed(fn, specs, on_result, address):
    from distributed import Client, as_completed

    with Client(address) as client:
        futures = client.map(fn, specs, pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        for fut in as_completed(futures):
            on_result(index[fut.key], fut.result())
