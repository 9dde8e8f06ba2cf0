#ifndef C_TASK_EXECUTOR_HOOK_H
#define C_TASK_EXECUTOR_HOOK_H

/// The address of the Swift runtime's `swift_task_enqueueGlobal_hook`: the function, when set,
/// that receives every job bound for the global executor (the job, then the runtime's own enqueue).
/// Reached by a link-time reference: a statically linked standard library keeps the symbol out of
/// the dynamic table, so `dlsym` cannot find it.
void *_Nullable *_Nonnull appstore_task_enqueue_global_hook(void);

#endif
