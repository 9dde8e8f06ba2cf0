#include "CTaskExecutorHook.h"

extern void *swift_task_enqueueGlobal_hook;

void **appstore_task_enqueue_global_hook(void) { return &swift_task_enqueueGlobal_hook; }
