/*  drv_ctl_events — what droverctl follows as it happens. events: the
    engine's event stream (a SUB socket on the events endpoint, asked from
    the engine unless given; over an http(s):// endpoint, GET
    /api/v1/events, its Server-Sent Events), one line per event, until
    --count events, --for seconds or Ctrl-C. tap: a sample of the records
    leaving a node. */
#include "drv_ctl_commands.h"

#include "drover/drv_mpjson.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t s_interrupted = 0;

static void s_on_signal(int sig)
{
    (void)sig;
    s_interrupted = 1;
}

//  One event as a line: JSON with its topic (-o json), or time, topic and
//  the other fields as key=value.
static void s_print_event(drv_ctl_t *ctl, const char *topic, json_t *event)
{
    if (ctl->json) {
        json_object_set_new(event, "topic", json_string(topic));
        char *text = json_dumps(event, JSON_COMPACT);
        printf("%s\n", text);
        free(text);
    } else {
        printf("%s %-20s", drv_ctl_str(event, "time"), topic);
        const char *key;
        json_t *value;
        json_object_foreach(event, key, value)
        {
            if (!strcmp(key, "time")) {
                continue;
            }
            char *text = json_dumps(value, JSON_ENCODE_ANY | JSON_COMPACT);
            printf(" %s=%s", key, text);
            free(text);
        }
        printf("\n");
    }
    fflush(stdout);
}

typedef struct {
    drv_ctl_t *ctl;
    char topic[128]; // of the event being read
    long count;      // events still to print (-1: no end)
} sse_t;

//  One line of Server-Sent Events: "event: TOPIC", then "data: {...}".
static bool s_on_sse_line(void *arg, const char *line, size_t len)
{
    sse_t *sse = arg;
    if (len > 7 && !strncmp(line, "event: ", 7)) {
        snprintf(sse->topic, sizeof sse->topic, "%.*s", (int)(len - 7), line + 7);
    } else if (len > 6 && !strncmp(line, "data: ", 6)) {
        json_t *event = json_loadb(line + 6, len - 6, 0, NULL);
        if (json_is_object(event)) {
            s_print_event(sse->ctl, sse->topic, event);
            sse->count -= sse->count > 0;
        }
        json_decref(event);
    }
    return sse->count != 0 && !s_interrupted;
}

static int s_events_http(drv_ctl_t *ctl, long count, long seconds, bool only_new, int argc, char **argv)
{
    char topics[1024] = "";
    for (int i = 0; i < argc; i++) {
        size_t used = strlen(topics);
        snprintf(topics + used, sizeof topics - used, "%s%s", used ? "," : "", argv[i]);
    }
    json_t *query = json_pack("{s:s}", "history", only_new ? "false" : "true"); // the kept first, as curl gets them
    if (topics[0]) {
        json_object_set_new(query, "topics", json_string(topics));
    }
    sse_t sse = {.ctl = ctl, .count = count};
    signal(SIGINT, s_on_signal);
    signal(SIGTERM, s_on_signal);
    if (!ctl->json) {
        fprintf(stderr, "droverctl: following %s/api/v1/events (Ctrl-C to stop)\n", ctl->options.endpoint);
    }
    char err[400];
    int status = count == 0
                     ? 200
                     : drv_ctl_http_stream(&ctl->options, "/api/v1/events", query, seconds >= 0 ? seconds * 1000 : -1,
                                           &s_interrupted, s_on_sse_line, &sse, err, sizeof err);
    json_decref(query);
    if (status < 0) {
        fprintf(stderr, "droverctl: %s\n", err);
        return DRV_CTL_UNREACHABLE;
    }
    if (status != 200) {
        fprintf(stderr, "droverctl: %d from %s/api/v1/events\n", status, ctl->options.endpoint);
        return DRV_CTL_SERVER_ERROR;
    }
    return DRV_CTL_OK;
}

//  The events the engine kept (GET /api/v1/events over zmq), oldest first,
//  printed as the live ones will be, at most count of them: how many.
//  (Subscribed first: what happens meanwhile comes live, perhaps once more.)
static long s_kept(drv_ctl_t *ctl, long count, int argc, char **argv)
{
    char topics[1024] = "";
    for (int i = 0; i < argc; i++) {
        size_t used = strlen(topics);
        snprintf(topics + used, sizeof topics - used, "%s%s", used ? "," : "", argv[i]);
    }
    json_t *query = json_pack("{s:s}", "topics", topics), *kept = NULL;
    char err[300];
    int status = drv_ctl_request(&ctl->options, "GET", "/api/v1/events", query, NULL, &kept, err, sizeof err);
    json_decref(query);
    long shown = 0;
    size_t i;
    json_t *e;
    json_array_foreach(status == 200 ? json_object_get(kept, "events") : NULL, i, e)
    {
        if (count >= 0 && shown >= count) {
            break;
        }
        s_print_event(ctl, json_string_value(json_object_get(e, "topic")), json_object_get(e, "event"));
        shown++;
    }
    json_decref(kept);
    return shown;
}

int drv_ctl_events(drv_ctl_t *ctl, int argc, char **argv)
{
    const char *endpoint = getenv("DROVER_EVENTS");
    long count = -1;
    long seconds = -1;
    bool only_new = false;
    int first_topic = argc;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--no-history")) {
            only_new = true;
        } else if (!strcmp(argv[i], "--count") && i + 1 < argc) {
            count = atol(argv[++i]);
        } else if (!strcmp(argv[i], "--for") && i + 1 < argc) {
            seconds = atol(argv[++i]);
        } else if (!strcmp(argv[i], "--events") && i + 1 < argc) {
            endpoint = argv[++i];
        } else {
            first_topic = i;
            break;
        }
    }
    if (!endpoint && drv_ctl_is_http(ctl->options.endpoint)) {
        return s_events_http(ctl, count, seconds, only_new, argc - first_topic, argv + first_topic);
    }
    json_t *info = NULL;
    if (!endpoint) {
        //  Ask the engine where its events are published.
        int rc = drv_ctl_call(ctl, "GET", "/api/v1/engine", NULL, NULL, &info);
        if (rc) {
            return rc;
        }
        endpoint = json_string_value(json_object_get(json_object_get(info, "admin"), "events"));
    }
    zsock_t *sub = zsock_new(ZMQ_SUB);
    char err[300];
    if (drv_ctl_secure(sub, &ctl->options, err, sizeof err) != 0 || zsock_connect(sub, "%s", endpoint) != 0) {
        fprintf(stderr, "droverctl: cannot subscribe to %s %s\n", endpoint, err);
        zsock_destroy(&sub);
        json_decref(info);
        return DRV_CTL_UNREACHABLE;
    }
    if (first_topic >= argc) {
        zsock_set_subscribe(sub, "");
    }
    for (int i = first_topic; i < argc; i++) {
        zsock_set_subscribe(sub, argv[i]);
    }
    signal(SIGINT, s_on_signal);
    signal(SIGTERM, s_on_signal);
    if (!ctl->json) {
        fprintf(stderr, "droverctl: following %s (Ctrl-C to stop)\n", endpoint);
    }
    fflush(stderr);
    int64_t deadline = seconds >= 0 ? zclock_mono() + seconds * 1000 : -1;
    long seen = only_new ? 0 : s_kept(ctl, count, argc - first_topic, argv + first_topic);
    while (!s_interrupted && (count < 0 || seen < count)) {
        long wait = deadline < 0 ? 200 : (long)(deadline - zclock_mono());
        if (deadline >= 0 && wait <= 0) {
            break;
        }
        zmq_pollitem_t item = {zsock_resolve(sub), 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&item, 1, wait < 200 ? wait : 200) <= 0) {
            continue;
        }
        zmsg_t *msg = zmsg_recv(sub);
        if (!msg || zmsg_size(msg) != 2) {
            zmsg_destroy(&msg);
            continue;
        }
        char *topic = zmsg_popstr(msg);
        zframe_t *frame = zmsg_pop(msg);
        char why[200];
        json_t *event = drv_mpjson_decode(zframe_data(frame), zframe_size(frame), why, sizeof why);
        if (event) {
            s_print_event(ctl, topic, event);
            seen++;
            json_decref(event);
        }
        free(topic);
        zframe_destroy(&frame);
        zmsg_destroy(&msg);
    }
    zsock_destroy(&sub);
    json_decref(info);
    return DRV_CTL_OK;
}

//  droverctl tap GROUP/PIPELINE [--node N] [--generation G] [--limit K]
//  [--for SECS]: one request that the engine answers when K records were
//  sampled or SECS passed; each record is printed as one line of JSON.
//  --generation: that generation's instances only (a canary's).
int drv_ctl_tap(drv_ctl_t *ctl, int argc, char **argv)
{
    const char *target = NULL, *node = NULL, *generation = NULL;
    long limit = 100, seconds = 10; // the route's default limit; over zmq the answer waits for the end
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--node") && i + 1 < argc) {
            node = argv[++i];
        } else if (!strcmp(argv[i], "--generation") && i + 1 < argc) {
            generation = argv[++i];
        } else if (!strcmp(argv[i], "--limit") && i + 1 < argc) {
            limit = atol(argv[++i]);
        } else if (!strcmp(argv[i], "--for") && i + 1 < argc) {
            seconds = atol(argv[++i]);
        } else if (!target && argv[i][0] != '-') {
            target = argv[i];
        } else {
            fprintf(stderr, "droverctl: tap: unexpected argument \"%s\"\n", argv[i]);
            return DRV_CTL_USAGE;
        }
    }
    char group[64], pipeline[64];
    if (!target || drv_ctl_split_target(target, group, pipeline, sizeof group) != 0 || limit < 1 || seconds < 1) {
        fprintf(
            stderr,
            "droverctl: usage: droverctl tap GROUP/PIPELINE [--node N] [--generation G] [--limit K] [--for SECS]\n");
        return DRV_CTL_USAGE;
    }
    char path[300];
    snprintf(path, sizeof path, "/api/v1/groups/%s/pipelines/%s/tap", group, pipeline);
    json_t *query = json_object();
    char number[32];
    snprintf(number, sizeof number, "%ld", limit);
    json_object_set_new(query, "limit", json_string(number));
    snprintf(number, sizeof number, "%ld", seconds);
    json_object_set_new(query, "timeout_secs", json_string(number));
    if (node) {
        json_object_set_new(query, "node", json_string(node));
    }
    if (generation) {
        json_object_set_new(query, "generation", json_string(generation));
    }
    if (ctl->options.timeout_ms < (int)seconds * 1000 + 5000) {
        ctl->options.timeout_ms = (int)seconds * 1000 + 5000; // the engine answers when the tap ends
    }
    ctl->options.accept = "application/x-ndjson"; // HTTP: the records as lines, ended with the tap
    json_t *body = NULL;
    int rc = drv_ctl_call(ctl, "GET", path, query, NULL, &body);
    json_decref(query);
    if (rc) {
        return rc;
    }
    if (json_is_string(body)) { // over HTTP: NDJSON, a record a line already
        fputs(json_string_value(body), stdout);
        json_decref(body);
        return DRV_CTL_OK;
    }
    if (ctl->json) {
        return drv_ctl_print_json(ctl, body);
    }
    size_t i;
    json_t *record;
    json_array_foreach(json_object_get(body, "records"), i, record)
    {
        char *line = json_dumps(record, JSON_COMPACT);
        printf("%s\n", line);
        free(line);
    }
    json_decref(body);
    return DRV_CTL_OK;
}
