// The glue tests hand out host buffers no allocation can satisfy, to check that the SDK releases
// them when copying throws bad_alloc. Under ASan or TSan an impossible allocation ends the process
// unless the allocator may return null; then operator new throws, as it does without them.
// (The runtimes read these at start-up; without a sanitizer nothing calls them.)
extern "C" const char* __asan_default_options();
extern "C" const char* __tsan_default_options();
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }
extern "C" const char* __tsan_default_options() { return "allocator_may_return_null=1"; }
