/*  drv_zygote — drover-worker --zygote FD: a pre-loaded worker that forks
    instances on droverd's request (protocol: drover/drv_zygote.h). */
#ifndef DRV_ZYGOTE_H
#define DRV_ZYGOTE_H

//  Serves requests on fd until droverd closes it. argc/argv are main()'s:
//  their memory becomes each instance's process title.
int drv_zygote_run(int fd, int argc, char **argv);

#endif
