/* Preloaded under the sanitizer build: keeps every dlopen'ed module mapped, so
 * that LeakSanitizer can name the driver library an allocation came from (a
 * module unloaded by dlclose shows as "<unknown module>" and cannot be matched
 * by .ci/lsan.supp). */
int dlclose(void *handle);
int dlclose(void *handle) {
    (void)handle;
    return 0;
}
