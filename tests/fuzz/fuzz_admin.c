/*  The admin API's zmq request frame: msgpack {method, path, query?, body?}
    decoded and checked exactly as droverd does before routing it. */
#include "fuzz.h"

#include "drv_admin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char why[340] = "";
    drv_admin_request_t *request = drv_admin_envelope_decode(data, size, why, sizeof why);
    if (request) {
        FUZZ_ASSERT(request->path && request->path[0] == '/');
        FUZZ_ASSERT(json_is_object(request->query));
        drv_admin_request_free(request);
    } else {
        FUZZ_ASSERT(why[0]);
    }
    return 0;
}
