#include "CTaskExecutorHook.h"

extern void *swift_task_enqueueGlobal_hook;

bool appstore_task_enqueue_global_hook_install(void *hook) {
    // Atomic, as NIO's own takeover is: another installer that also compares and exchanges loses
    // cleanly instead of both writing.
    void *expected = 0;
    return __atomic_compare_exchange_n(&swift_task_enqueueGlobal_hook, &expected, hook, false, __ATOMIC_SEQ_CST,
                                       __ATOMIC_SEQ_CST);
}
