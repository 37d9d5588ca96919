/*  The control protocol codec: any frame a worker, the broker or a stranger
    sends to droverd's control socket. What decodes must re-encode to a frame
    that decodes to the same message. */
#include "fuzz.h"

#include "drover/drv_msg.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    drv_msg_t msg;
    char err[200];
    if (drv_msg_decode(&msg, data, size, err, sizeof err) != 0) {
        FUZZ_ASSERT(err[0]);
        drv_msg_clear(&msg);
        return 0;
    }
    char *once, *twice;
    size_t once_size, twice_size;
    FUZZ_ASSERT(drv_msg_encode(&msg, &once, &once_size) == 0);
    drv_msg_t back;
    FUZZ_ASSERT(drv_msg_decode(&back, once, once_size, err, sizeof err) == 0);
    FUZZ_ASSERT(back.type == msg.type);
    FUZZ_ASSERT(drv_msg_encode(&back, &twice, &twice_size) == 0);
    FUZZ_ASSERT(once_size == twice_size && !memcmp(once, twice, once_size));
    free(once);
    free(twice);
    drv_msg_clear(&back);
    drv_msg_clear(&msg);
    return 0;
}
