#ifndef C_TASK_EXECUTOR_HOOK_H
#define C_TASK_EXECUTOR_HOOK_H

#include <stdbool.h>

/// Installs `hook` as the Swift runtime's `swift_task_enqueueGlobal_hook` (the function that then
/// receives every job bound for the global executor: the job, then the runtime's own enqueue) with
/// an atomic compare-and-exchange, so only if no hook is set; returns whether it was installed.
/// The symbol is reached by a link-time reference: a statically linked standard library keeps it
/// out of the dynamic table, so `dlsym` cannot find it.
bool appstore_task_enqueue_global_hook_install(void *_Nonnull hook);

#endif
