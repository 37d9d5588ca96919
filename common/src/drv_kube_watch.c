/*  drv_kube_watch — a collection kept current in a thread of its own, as
    client-go's reflector does (drover/drv_kube.h, docs/kubernetes.md):
    list (in pages), then watch from the list's resourceVersion with
    bookmarks, one event per line of the answer; a watch that ends is
    started again from the last resourceVersion seen, a 410 (that version
    is too old) lists again, and a failure waits 0.5 s doubling to 30 s
    (±20 %) before the next try. */
#include "drv_kube_internal.h"

#include "drover/drv_log.h"
#include "drover/drv_thread.h"
#include "drover/drv_time.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 500
#define WATCH_SECS 290 // the server ends a watch after this; it is started again at once
#define HARD_SECS 330  // a watch whose server went silent is given up after this
#define LINE_MAX_BYTES (16 << 20)
#define BACKOFF_MIN_MS 500
#define BACKOFF_MAX_MS 30000

struct drv_kube_watch_t {
    drv_kube_t *kube;
    char *path;
    char query[2048]; // "&fieldSelector=…&labelSelector=…" as asked, escaped ("": every object)
    drv_kube_event_fn *fn;
    void *arg;
    drv_thread_t thread; // its lock guards stats
    drv_kube_watch_stats_t stats;
    //  The thread's own.
    char rv[128]; // the resourceVersion to watch from ("": list first)
    bool relist;  // a 410 said the version is gone
    char *line;   // the answer's line being read
    size_t line_size;
    unsigned seed;
};

static bool s_stopping(drv_kube_watch_t *self)
{
    return drv_thread_stopping(&self->thread);
}

static void s_state(drv_kube_watch_t *self, const char *state, const char *error)
{
    pthread_mutex_lock(&self->thread.lock);
    self->stats.state = state;
    if (error) {
        self->stats.errors++;
        snprintf(self->stats.last_error, sizeof self->stats.last_error, "%s", error);
    }
    pthread_mutex_unlock(&self->thread.lock);
}

static void s_count(drv_kube_watch_t *self, int64_t *counter)
{
    pthread_mutex_lock(&self->thread.lock);
    (*counter)++;
    pthread_mutex_unlock(&self->thread.lock);
}

//  Waits ms, or less when stopped.
static void s_sleep(drv_kube_watch_t *self, int64_t ms)
{
    int64_t until = drv_time_mono_ms() + ms;
    pthread_mutex_lock(&self->thread.lock);
    for (int64_t now = drv_time_mono_ms(); !self->thread.stop && now < until; now = drv_time_mono_ms()) {
        drv_thread_wait(&self->thread, until - now);
    }
    pthread_mutex_unlock(&self->thread.lock);
}

static const char *s_rv_of(const json_t *object)
{
    return json_string_value(json_object_get(json_object_get(object, "metadata"), "resourceVersion"));
}

static void s_set_rv(drv_kube_watch_t *self, const char *rv)
{
    if (rv && strlen(rv) < sizeof self->rv) {
        snprintf(self->rv, sizeof self->rv, "%s", rv);
    }
}

//  Every page of the list: LISTED, each item ADDED, SYNCED. 0, or -1 with err.
static int s_list(drv_kube_watch_t *self, char *err, size_t errlen)
{
    char cont[1024] = "";
    bool first = true;
    do {
        char path[2048];
        snprintf(path, sizeof path, "%s?limit=%d%s%s%s", self->path, PAGE, self->query, cont[0] ? "&continue=" : "",
                 cont);
        json_t *list = NULL;
        int status = drv_kube_get(self->kube, path, &list, err, errlen);
        if (status != 200 || !json_is_array(json_object_get(list, "items"))) {
            if (status && status != 200) {
                const char *message = json_string_value(json_object_get(list, "message"));
                snprintf(err, errlen, "list %s: HTTP %d%s%s", self->path, status, message ? ": " : "",
                         message ? message : "");
            }
            json_decref(list);
            return -1;
        }
        if (first) {
            self->fn(self->arg, DRV_KUBE_LISTED, NULL);
            first = false;
        }
        size_t index;
        json_t *item;
        json_array_foreach(json_object_get(list, "items"), index, item)
        {
            self->fn(self->arg, DRV_KUBE_ADDED, item);
        }
        const json_t *meta = json_object_get(list, "metadata");
        s_set_rv(self, json_string_value(json_object_get(meta, "resourceVersion")));
        const char *next = json_string_value(json_object_get(meta, "continue"));
        cont[0] = 0;
        if (next && *next) {
            char *escaped = curl_easy_escape(NULL, next, 0);
            snprintf(cont, sizeof cont, "%s", escaped ? escaped : "");
            curl_free(escaped);
        }
        json_decref(list);
    } while (cont[0] && !s_stopping(self));
    self->fn(self->arg, DRV_KUBE_SYNCED, NULL);
    return 0;
}

//  One line of a watch's answer: an event. false when the watch must end
//  (an ERROR event; a 410 among them asks for a list).
static bool s_event(drv_kube_watch_t *self, const char *line, size_t len)
{
    json_error_t error;
    json_t *event = json_loadb(line, len, 0, &error);
    const char *type = json_string_value(json_object_get(event, "type"));
    const json_t *object = json_object_get(event, "object");
    bool go_on = true;
    if (!type || !json_is_object(object)) {
        drv_warn("kubernetes watch: an event that is not one path=%s bytes=%zu", self->path, len);
    } else if (!strcmp(type, "ERROR")) {
        json_int_t code = json_integer_value(json_object_get(object, "code"));
        self->relist = code == 410;
        if (!self->relist) {
            char why[200];
            snprintf(why, sizeof why, "watch %s: %s", self->path,
                     json_string_value(json_object_get(object, "message")) ?: "an ERROR event");
            s_state(self, "backing_off", why);
        }
        go_on = false;
    } else {
        s_set_rv(self, s_rv_of(object));
        drv_kube_event_t kind = !strcmp(type, "ADDED")      ? DRV_KUBE_ADDED
                                : !strcmp(type, "MODIFIED") ? DRV_KUBE_MODIFIED
                                : !strcmp(type, "DELETED")  ? DRV_KUBE_DELETED
                                                            : (drv_kube_event_t)-1;
        if ((int)kind >= 0) {
            self->fn(self->arg, kind, object);
            s_count(self, &self->stats.events);
        } // BOOKMARK: its resourceVersion alone
    }
    json_decref(event);
    return go_on;
}

static size_t s_on_data(char *data, size_t size, size_t count, void *arg)
{
    drv_kube_watch_t *self = arg;
    size_t n = size * count;
    for (size_t i = 0; i < n; i++) {
        if (data[i] != '\n') {
            if (self->line_size >= LINE_MAX_BYTES) {
                return 0; // no object is that large: the answer is not a watch
            }
            if ((self->line_size & 4095) == 0) {
                char *grown = realloc(self->line, self->line_size + 4096);
                if (!grown) {
                    return 0;
                }
                self->line = grown;
            }
            self->line[self->line_size++] = data[i];
            continue;
        }
        bool go_on = self->line_size == 0 || s_event(self, self->line, self->line_size);
        self->line_size = 0;
        if (!go_on) {
            return 0;
        }
    }
    return n;
}

static int s_on_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    (void)a, (void)b, (void)c, (void)d;
    return s_stopping(arg) ? 1 : 0;
}

//  Watches from self->rv until the answer ends: 0 when it ended as a
//  watch does (its time is up), -1 with err (self->relist: list again).
static int s_watch(drv_kube_watch_t *self, char *err, size_t errlen)
{
    char path[2048];
    snprintf(path, sizeof path, "%s?watch=1&allowWatchBookmarks=true&timeoutSeconds=%d&resourceVersion=%s%s",
             self->path, WATCH_SECS, self->rv, self->query);
    struct curl_slist *headers = NULL;
    CURL *easy = drv_kube_easy(self->kube, path, &headers, err, errlen);
    if (!easy) {
        return -1;
    }
    self->line_size = 0;
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, s_on_data);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, self);
    curl_easy_setopt(easy, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(easy, CURLOPT_XFERINFOFUNCTION, s_on_progress);
    curl_easy_setopt(easy, CURLOPT_XFERINFODATA, self);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT, (long)HARD_SECS);
    s_state(self, "watching", NULL);
    CURLcode rc = curl_easy_perform(easy);
    long status = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(easy);
    curl_slist_free_all(headers);
    if (status == 410) {
        self->relist = true;
    }
    if (self->relist) {
        snprintf(err, errlen, "watch %s: resourceVersion %s is gone (410): listing again", self->path, self->rv);
        return -1;
    }
    if (rc == CURLE_OK && status == 200) {
        return 0;
    }
    if (rc == CURLE_WRITE_ERROR && status == 200) {
        snprintf(err, errlen, "watch %s: the server ended it with an error", self->path);
    } else if (rc != CURLE_OK) {
        snprintf(err, errlen, "watch %s: %s", self->path, curl_easy_strerror(rc));
    } else {
        snprintf(err, errlen, "watch %s: HTTP %ld", self->path, status);
    }
    return -1;
}

static void *s_run(void *arg)
{
    drv_kube_watch_t *self = arg;
    int64_t backoff = 0;
    bool listed = false;
    while (!s_stopping(self)) {
        char err[300] = "";
        int rc;
        if (!self->rv[0] || self->relist) {
            s_state(self, "listing", NULL);
            if (listed) {
                s_count(self, &self->stats.relists);
            }
            self->relist = false;
            self->rv[0] = 0;
            rc = s_list(self, err, sizeof err);
            listed = listed || rc == 0;
        } else {
            rc = s_watch(self, err, sizeof err);
        }
        if (s_stopping(self)) {
            break;
        }
        if (rc == 0) {
            backoff = 0;
            continue;
        }
        if (self->relist) {
            drv_info("kubernetes: %s", err);
            continue; // a list at once: the version was compacted away, nothing failed
        }
        backoff = backoff ? (backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2) : BACKOFF_MIN_MS;
        int64_t wait = backoff * (80 + rand_r(&self->seed) % 41) / 100;
        s_state(self, "backing_off", err);
        drv_warn("kubernetes: %s; trying again in %lld ms", err, (long long)wait);
        s_sleep(self, wait);
    }
    return NULL;
}

//  "&name=value" (escaped) at the end of query, when value says something.
static void s_query_add(char *query, size_t size, const char *name, const char *value)
{
    char *escaped = value && *value ? curl_easy_escape(NULL, value, 0) : NULL;
    if (escaped) {
        size_t at = strlen(query);
        snprintf(query + at, size - at, "&%s=%s", name, escaped);
        curl_free(escaped);
    }
}

drv_kube_watch_t *drv_kube_watch_start(drv_kube_t *kube, const char *path, const char *field_selector,
                                       const char *label_selector, drv_kube_event_fn *fn, void *arg)
{
    drv_kube_watch_t *self = calloc(1, sizeof *self);
    self->kube = kube;
    self->path = strdup(path);
    s_query_add(self->query, sizeof self->query, "fieldSelector", field_selector);
    s_query_add(self->query, sizeof self->query, "labelSelector", label_selector);
    self->fn = fn;
    self->arg = arg;
    self->seed = (unsigned)drv_time_mono_ms();
    self->stats.state = "listing";
    if (!drv_thread_start(&self->thread, s_run, self)) {
        drv_kube_watch_stop(&self);
    }
    return self;
}

void drv_kube_watch_stop(drv_kube_watch_t **self_p)
{
    if (!self_p || !*self_p) {
        return;
    }
    drv_kube_watch_t *self = *self_p;
    drv_thread_stop(&self->thread);
    free(self->path);
    free(self->line);
    free(self);
    *self_p = NULL;
}

void drv_kube_watch_stats(drv_kube_watch_t *self, drv_kube_watch_stats_t *out)
{
    pthread_mutex_lock(&self->thread.lock);
    *out = self->stats;
    pthread_mutex_unlock(&self->thread.lock);
}
