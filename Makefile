# cairn — one plain GNU Makefile.
#   make              build build/cairn (release, -O2)
#   make test         unit tests + integration tests
#   make unit         unit tests only (and builds the measuring tools beside them)
#   make check        what CI runs: warnings as errors, unit + integration + fuzz replay
#   make MODE=asan    AddressSanitizer + UndefinedBehaviorSanitizer build (into build-asan/)
#   make fuzz         libFuzzer drivers (clang) into build-fuzz/
#   make fuzz-replay  replay every fuzz corpus under gcc (part of check)
MODE ?= release
CC ?= cc
PKGS := openssl libisal libxxhash expat jansson liburing libcurl zlib
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

WARN := -Wall -Wextra -Wshadow -Wno-unused-parameter -Wstrict-prototypes -Wmissing-prototypes \
        -Wformat=2 -Wvla
ifeq ($(WERROR),1)
WARN += -Werror
endif
BASE_CFLAGS := -std=gnu11 -g -D_GNU_SOURCE -Isrc $(WARN) $(PKG_CFLAGS) -pthread
ifeq ($(MODE),asan)
B := build-asan
OPT := -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
else
B := build
OPT := -O2
endif
CFLAGS_ALL := $(BASE_CFLAGS) $(OPT) $(CFLAGS)
LDFLAGS_ALL := $(OPT) -pthread $(LDFLAGS)
LIBS := $(PKG_LIBS) -lm

LIB_SRC := $(sort $(filter-out src/bin/%,$(wildcard src/*/*.c)))
LIB_OBJ := $(LIB_SRC:%.c=$(B)/%.o)
UNIT_SRC := $(sort $(wildcard tests/unit/*/test_*.c))
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)
# Measuring tools beside the unit tests (not tests: built by `make unit` so that they keep
# compiling, run by hand): bench_put, the durable small-PUT rate of docs/FORMAT.md §6.
TOOL_BIN := $(B)/tests/object/bench_put
FUZZ_SRC := $(sort $(wildcard fuzz/*.c))
FUZZ_SRC := $(filter-out fuzz/replay_main.c,$(FUZZ_SRC))

.PHONY: all test unit integration check fuzz fuzz-run fuzz-replay clean layers deps-run deps-check \
        run asan-check

# The first target, so that a plain `make` builds the server.
all: $(B)/cairn

# The README's two commands: `make run` and `make check`, each installing the Debian
# packages it needs (scripts/deps.sh: `run` the compiler and libraries, `check` also the
# test tools and clients).
deps-run:
	@scripts/deps.sh run
deps-check:
	@scripts/deps.sh check

run: deps-run
	$(MAKE) all
	@mkdir -p data
	./$(B)/cairn server ./data --address 127.0.0.1:9000

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

$(B)/libcairn.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(B)/cairn: $(B)/src/bin/cairn.o $(B)/libcairn.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS)

$(B)/tests/%: tests/unit/%.c $(B)/libcairn.a tests/unit/test.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Itests/unit -o $@ $< $(B)/libcairn.a $(LIBS)

# Each binary ends with "N passed, N failed, N skipped" (tests/unit/test.h); the totals are
# summed here, and a binary that exits non-zero or prints no such line fails the target.
unit: $(UNIT_BIN) $(TOOL_BIN)
	@pass=0; fail=0; skip=0; bad=0; for t in $(UNIT_BIN); do \
	  out=$$(cd tests/vectors && ../../$$t 2>&1); rc=$$?; echo "$$out" | grep -v '^$$'; \
	  line=$$(echo "$$out" | grep -E '[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped' | tail -1); \
	  p=$$(echo "$$line" | sed -E 's/.* ([0-9]+) passed.*/\1/'); f=$$(echo "$$line" | sed -E 's/.* ([0-9]+) failed.*/\1/'); \
	  s=$$(echo "$$line" | sed -E 's/.* ([0-9]+) skipped.*/\1/'); \
	  pass=$$((pass + $${p:-0})); fail=$$((fail + $${f:-0})); skip=$$((skip + $${s:-0})); \
	  if [ $$rc -ne 0 ] || [ -z "$$line" ]; then bad=$$((bad+1)); echo "FAILED: $$t (exit $$rc)"; fi; \
	done; echo "unit: $$pass passed, $$fail failed, $$skip skipped"; [ $$bad -eq 0 ] && [ $$fail -eq 0 ]

integration: $(B)/cairn
	CAIRN_BIN=$(abspath $(B)/cairn) tests/integration/run.sh

test: unit integration

# Fuzz drivers replayed over their corpora with the normal compiler (no libFuzzer needed).
FUZZ_REPLAY := $(FUZZ_SRC:fuzz/%.c=$(B)/fuzz-replay/%)
$(B)/fuzz-replay/%: fuzz/%.c fuzz/replay_main.c $(B)/libcairn.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -o $@ $< fuzz/replay_main.c $(B)/libcairn.a $(LIBS)
fuzz-replay: $(FUZZ_REPLAY)
	@for f in $(FUZZ_REPLAY); do n=$$(basename $$f); $$f fuzz/corpus/$$n || exit 1; done

FUZZ_BIN := $(FUZZ_SRC:fuzz/%.c=build-fuzz/%)
# The library is compiled once for every driver (coverage-instrumented, ASan + UBSan),
# then each driver links against it.
FUZZ_OBJ := $(LIB_SRC:%.c=build-fuzz/obj/%.o)
build-fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	clang $(BASE_CFLAGS) -O1 -fsanitize=fuzzer-no-link,address,undefined -MMD -MP -c -o $@ $<
build-fuzz/libcairn-fuzz.a: $(FUZZ_OBJ)
	@rm -f $@
	ar rcs $@ $^
-include $(FUZZ_OBJ:.o=.d)
build-fuzz/%: fuzz/%.c build-fuzz/libcairn-fuzz.a
	clang $(BASE_CFLAGS) -O1 -fsanitize=fuzzer,address,undefined -o $@ $< build-fuzz/libcairn-fuzz.a $(LIBS)
fuzz: $(FUZZ_BIN)

# Each libFuzzer driver for FUZZ_SECONDS over a scratch copy of its corpus (CI: bounded).
# A fixed FUZZ_SEED makes CI's exploration repeatable (the same inputs in the same order
# as on a developer's machine); run with FUZZ_SEED=0 (libFuzzer: random) to explore anew.
FUZZ_SECONDS ?= 20
FUZZ_SEED ?= 1
fuzz-run: $(FUZZ_BIN)
	@for f in $(FUZZ_BIN); do n=$$(basename $$f); rm -rf build-fuzz/corpus-$$n; \
	  mkdir -p build-fuzz/corpus-$$n && cp fuzz/corpus/$$n/* build-fuzz/corpus-$$n/ && \
	  echo "fuzz: $$n for $(FUZZ_SECONDS)s" && \
	  $$f -seed=$(FUZZ_SEED) -max_total_time=$(FUZZ_SECONDS) -print_final_stats=0 build-fuzz/corpus-$$n >build-fuzz/$$n.log 2>&1 || \
	  { tail -40 build-fuzz/$$n.log; echo "fuzz: $$n FAILED (reproducer in build-fuzz/)"; exit 1; }; done

layers:
	scripts/check-layers.sh

check: deps-check layers
	$(MAKE) WERROR=1 all unit fuzz-replay
	$(MAKE) WERROR=1 integration

# The sanitizer pass of CI: unit tests, fuzz replay and the integration suite under
# AddressSanitizer + UndefinedBehaviorSanitizer (all but the second, 4-drive pytest pass,
# to keep CI well under 30 minutes; the erasure tests run here all the same).
asan-check:
	$(MAKE) MODE=asan WERROR=1 all unit fuzz-replay
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ONLY="pytest durability clients js" $(MAKE) MODE=asan WERROR=1 integration

clean:
	rm -rf build build-asan build-fuzz

-include $(LIB_OBJ:.o=.d) $(B)/src/bin/cairn.d
