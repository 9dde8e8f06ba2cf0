#ifndef C_RDKAFKA_SHIM_H
#define C_RDKAFKA_SHIM_H
#include <librdkafka/rdkafka.h>
#endif
