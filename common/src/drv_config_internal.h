/*  drv_config_internal — what drv_config.c shares with the files that check
    parts of the config file (drv_config_opamp.c, drv_config_kubernetes.c). */
#ifndef DRV_CONFIG_INTERNAL_H
#define DRV_CONFIG_INTERNAL_H

#include "drover/drv_problems.h"

#include <jansson.h>

//  engine.opamp checked, in its normalized form ({endpoint, headers, tls:
//  {ca_file, insecure_skip_verify}, poll_interval_secs, instance_uid_file});
//  NULL when absent. instance_uid_file defaults beside the state file,
//  else in run_dir.
json_t *drv_config_opamp(json_t *opamp, const char *state_file, const char *run_dir, drv_problems_t *problems);
json_t *drv_config_telemetry(json_t *telemetry, drv_problems_t *problems);

//  engine.kubernetes checked, in its normalized form ({api: {server,
//  token_file?, ca_file?}, watch: {namespace ("": every one),
//  label_selector ("": none)}}); NULL when absent (drv_config_kubernetes.c).
json_t *drv_config_kubernetes(json_t *kubernetes, drv_problems_t *problems);

//  ${env:NAME} and ${env:NAME:-default} replaced in every string of a
//  config file's document but secrets' (drv_config_env.c); what cannot be
//  is a problem at its path.
void drv_config_env_expand(json_t *doc, drv_problems_t *problems);

#endif
