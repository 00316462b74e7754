/*-------------------------------------------------------------------------
 *
 * logbench_counter.c
 *		Counts the records the server sends to its log, by the emitting
 *		session's application_name and by level, in shared memory.
 *
 * Every record the server sends to its log passes through emit_log_hook in
 * the process that emits it.  A process counts its records in a slot of its
 * own, indexed by its PGPROC number: the path of a record takes no lock and
 * writes one cache line that no other process writes.  A slot's counts belong
 * to one entry of a fixed table of application names; when the process's
 * name changes, and when it exits, it moves ("folds") them into that entry.
 * A reader adds the live slots to the entries.  Folds and reads are ordered
 * as a seqlock orders them: a fold increments folds_started before it moves
 * counts and folds_finished after, and a read that overlaps a fold is
 * repeated.
 *
 * A process without a slot (the postmaster, a backend before InitProcess,
 * one whose slot was released as it exits) adds to its entry with an atomic
 * increment: such records are few.
 *
 * README.md says what is counted, how to read it, and why.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/twophase.h"
#include "fmgr.h"
#include "funcapi.h"
#include "libpq/libpq-be.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/elog.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#if PG_VERSION_NUM < 150000
#error "logbench_counter needs PostgreSQL 15 or later (shmem_request_hook)"
#endif

#ifdef PG_MODULE_MAGIC_EXT
PG_MODULE_MAGIC_EXT(.name = "logbench_counter", .version = "1.0");
#else
PG_MODULE_MAGIC;
#endif

#if PG_VERSION_NUM < 160000
void		_PG_init(void);
#endif

PG_FUNCTION_INFO_V1(logbench_counter_records);
PG_FUNCTION_INFO_V1(logbench_counter_counting_since);

/* Levels as csvlog names them, except that every DEBUGn is DEBUG. */
typedef enum CounterLevel
{
	LEVEL_DEBUG,
	LEVEL_LOG,
	LEVEL_INFO,
	LEVEL_NOTICE,
	LEVEL_WARNING,
	LEVEL_ERROR,
	LEVEL_FATAL,
	LEVEL_PANIC,
} CounterLevel;

#define LEVEL_COUNT (LEVEL_PANIC + 1)

static const char *const level_names[LEVEL_COUNT] = {
	"DEBUG", "LOG", "INFO", "NOTICE", "WARNING", "ERROR", "FATAL", "PANIC",
};

/*
 * The first entry counts the records of processes with no application_name,
 * the second those of names that found the table full; named entries follow.
 */
#define UNTAGGED_ENTRY 0
#define OVERFLOW_ENTRY 1
#define FIRST_NAMED_ENTRY 2
#define NO_ENTRY PG_UINT32_MAX

/*
 * An entry's name is written once, before ready is set; entries are never
 * freed, so a process may look names up without a lock.
 */
typedef struct NameEntry
{
	pg_atomic_uint64 records[LEVEL_COUNT];
	pg_atomic_uint32 ready;
	char		name[NAMEDATALEN];
} NameEntry;

/*
 * One process's counts, written only by that process.  Padded to a cache line
 * so that neighbouring processes never write the same line.
 */
typedef union BackendSlot
{
	struct
	{
		pg_atomic_uint64 records[LEVEL_COUNT];
		/* the entry the records belong to, NO_ENTRY when none */
		pg_atomic_uint32 entry;
	}			s;
	char		pad[PG_CACHE_LINE_SIZE];
} BackendSlot;

StaticAssertDecl(sizeof(((BackendSlot *) NULL)->s) <= PG_CACHE_LINE_SIZE,
				 "a backend slot fits in a cache line");

typedef struct CounterShared
{
	pg_atomic_uint32 folds_started;
	pg_atomic_uint32 folds_finished;
	/* entries handed out, named ones included */
	pg_atomic_uint32 entries_used;
	uint32		slot_count;
	uint32		entry_count;
	/* when counting started: the counts start again with shared memory */
	TimestampTz counting_since;
} CounterShared;

/* How long a read waits for folds to let it take a consistent snapshot. */
#define READ_TIMEOUT_MS 10000

/* GUC */
static int	max_application_names = 1024;

/* Saved hook values */
static emit_log_hook_type prev_emit_log_hook = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* Shared memory, NULL until attached and after the postmaster detaches it */
static CounterShared *shared = NULL;
static BackendSlot *slots = NULL;
static NameEntry *entries = NULL;

/* This process's slot, NULL when it has none */
static BackendSlot *my_slot = NULL;

/* Set when this process must not claim a slot (again) */
static bool slot_unavailable = false;

/* The entry of the name this process last counted under, and that name */
static uint32 my_entry = NO_ENTRY;
static char my_name[NAMEDATALEN];

static void counter_emit_log(ErrorData *edata);
static void counter_shmem_request(void);
static void counter_shmem_startup(void);
static Size counter_shmem_size(void);
static uint32 counter_slot_count(void);
static void forget_shared_memory(int code, Datum arg);
static void count_record(const ErrorData *edata);
static void claim_slot(void);
static void release_slot(int code, Datum arg);
static void switch_entry(const char *name);
static void move_slot_counts(uint32 new_entry);
static uint32 find_or_add_entry(const char *name);
static uint32 snapshot_counts(uint64 *totals, char *names);
static void check_loaded(void);

void
_PG_init(void)
{
	/*
	 * Shared memory and the hook are set up in the postmaster, so that every
	 * process counts from the server's start.  Loaded later, the library
	 * installs nothing, and records() says so.
	 */
	if (!process_shared_preload_libraries_in_progress)
		return;

	DefineCustomIntVariable("logbench_counter.max_application_names",
							"Sets how many distinct application names are counted apart.",
							"Records of further names are counted together, under a NULL application_name.",
							&max_application_names,
							1024,
							16,
							100000,
							PGC_POSTMASTER,
							0,
							NULL,
							NULL,
							NULL);
	MarkGUCPrefixReserved("logbench_counter");

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = counter_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = counter_shmem_startup;
	prev_emit_log_hook = emit_log_hook;
	emit_log_hook = counter_emit_log;
}

/*
 * Every process that may run with a PGPROC has a slot: backends, auxiliary
 * processes and the prepared transactions' placeholders, which never log but
 * share the numbering.
 */
static uint32
counter_slot_count(void)
{
	return MaxBackends + NUM_AUXILIARY_PROCS + max_prepared_xacts;
}

static Size
counter_shmem_size(void)
{
	Size		size;

	size = CACHELINEALIGN(sizeof(CounterShared));
	size = add_size(size, mul_size(counter_slot_count(), sizeof(BackendSlot)));
	size = add_size(size, mul_size(FIRST_NAMED_ENTRY + max_application_names,
								   sizeof(NameEntry)));
	return size;
}

static void
counter_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(counter_shmem_size());
}

static void
counter_shmem_startup(void)
{
	bool		found;
	CounterShared *state;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	state = ShmemInitStruct("logbench_counter", counter_shmem_size(), &found);
	if (!found)
	{
		uint32		i;
		int			level;
		BackendSlot *new_slots;
		NameEntry  *new_entries;

		pg_atomic_init_u32(&state->folds_started, 0);
		pg_atomic_init_u32(&state->folds_finished, 0);
		pg_atomic_init_u32(&state->entries_used, FIRST_NAMED_ENTRY);
		state->slot_count = counter_slot_count();
		state->entry_count = FIRST_NAMED_ENTRY + max_application_names;
		state->counting_since = GetCurrentTimestamp();

		new_slots = (BackendSlot *) ((char *) state + CACHELINEALIGN(sizeof(CounterShared)));
		new_entries = (NameEntry *) (new_slots + state->slot_count);
		for (i = 0; i < state->slot_count; i++)
		{
			for (level = 0; level < LEVEL_COUNT; level++)
				pg_atomic_init_u64(&new_slots[i].s.records[level], 0);
			pg_atomic_init_u32(&new_slots[i].s.entry, NO_ENTRY);
		}
		for (i = 0; i < state->entry_count; i++)
		{
			for (level = 0; level < LEVEL_COUNT; level++)
				pg_atomic_init_u64(&new_entries[i].records[level], 0);
			pg_atomic_init_u32(&new_entries[i].ready, i < FIRST_NAMED_ENTRY);
			new_entries[i].name[0] = '\0';
		}
	}
	LWLockRelease(AddinShmemInitLock);

	slots = (BackendSlot *) ((char *) state + CACHELINEALIGN(sizeof(CounterShared)));
	entries = (NameEntry *) (slots + state->slot_count);
	shared = state;

	/* Entry numbers of an earlier shared memory mean nothing in this one. */
	my_entry = NO_ENTRY;

	/*
	 * The postmaster detaches and recreates shared memory when it restarts
	 * after a crash, and logs in between: forget it before it is detached.
	 * on_shmem_exit runs callbacks in reverse order of registration, so this
	 * one runs before the detachment registered when the segment was made.
	 */
	if (!IsUnderPostmaster)
		on_shmem_exit(forget_shared_memory, (Datum) 0);
}

static void
forget_shared_memory(int code, Datum arg)
{
	shared = NULL;
	slots = NULL;
	entries = NULL;
	my_entry = NO_ENTRY;
}

/*
 * Counts a record after the earlier hooks have run: one of them may have
 * suppressed it (output_to_server = false).  Hooks of libraries loaded after
 * this one run before it is called, and what they decide after calling it is
 * not seen: README.md asks for this library last in shared_preload_libraries.
 *
 * The logging collector has detached from shared memory: its own few records
 * are not counted.
 */
static void
counter_emit_log(ErrorData *edata)
{
	if (prev_emit_log_hook)
		prev_emit_log_hook(edata);

	if (edata->output_to_server && shared != NULL && MyBackendType != B_LOGGER)
		count_record(edata);
}

static inline CounterLevel
level_of(int elevel)
{
	if (elevel < LOG)
		return LEVEL_DEBUG;
	switch (elevel)
	{
		case LOG:
		case LOG_SERVER_ONLY:
			return LEVEL_LOG;
		case INFO:
			return LEVEL_INFO;
		case NOTICE:
			return LEVEL_NOTICE;
		case WARNING:
		case WARNING_CLIENT_ONLY:
			return LEVEL_WARNING;
		case ERROR:
			return LEVEL_ERROR;
		case FATAL:
			return LEVEL_FATAL;
		default:
			return LEVEL_PANIC;
	}
}

/*
 * The name a record is counted under is the one a reader of the log finds in
 * it: the application_name field (csvlog's and jsonlog's, %a of
 * log_line_prefix), or, for the record that reports it in its message while
 * a backend starts and its startup options have not applied yet ("connection
 * authorized: ... application_name=X"), that name.  Other records of a
 * starting backend ("connection received", PostgreSQL 18's "connection
 * authenticated") carry no name.
 */
static inline const char *
emitting_application_name(const ErrorData *edata)
{
	const char *reported;
	const char *name;
	size_t		length;

	if (application_name != NULL && application_name[0] != '\0')
		return application_name;
	if (MyProcPort == NULL || MyProcPort->application_name == NULL ||
		IsNormalProcessingMode() || edata->message == NULL)
		return "";

	name = MyProcPort->application_name;
	length = strlen(name);
	reported = strstr(edata->message, " application_name=");
	if (reported == NULL)
		return "";
	reported += strlen(" application_name=");
	if (strncmp(reported, name, length) != 0 ||
		(reported[length] != '\0' && reported[length] != ' '))
		return "";
	return name;
}

static void
count_record(const ErrorData *edata)
{
	const char *name = emitting_application_name(edata);
	CounterLevel level = level_of(edata->elevel);

	if (my_slot == NULL && !slot_unavailable && MyProc != NULL &&
		!proc_exit_inprogress)
		claim_slot();

	if (my_entry == NO_ENTRY || strncmp(name, my_name, NAMEDATALEN - 1) != 0)
		switch_entry(name);

	if (my_slot != NULL)
	{
		pg_atomic_uint64 *records = &my_slot->s.records[level];

		/* Only this process writes its slot: a plain store is enough. */
		pg_atomic_write_u64(records, pg_atomic_read_u64(records) + 1);
	}
	else
		pg_atomic_fetch_add_u64(&entries[my_entry].records[level], 1);
}

/*
 * Takes the slot of this process's PGPROC, which is this process's until
 * ProcKill runs on exit, after release_slot.
 */
static void
claim_slot(void)
{
	int			procno;

#if PG_VERSION_NUM >= 170000
	procno = MyProcNumber;
#else
	procno = MyProc->pgprocno;
#endif
	if (procno < 0 || (uint32) procno >= shared->slot_count)
	{
		slot_unavailable = true;
		return;
	}
	/*
	 * Should registering fail (too many exit callbacks: FATAL), the records,
	 * that FATAL's included, count without a slot rather than try again.
	 */
	slot_unavailable = true;
	before_shmem_exit(release_slot, (Datum) 0);
	slot_unavailable = false;
	my_slot = &slots[procno];
	/* The slot's counts must move to this process's entry first. */
	my_entry = NO_ENTRY;
}

/*
 * Folds the slot's counts into their entry before the PGPROC, and with it the
 * slot, goes to the next process.  Records logged later in the exit count
 * straight into the entry.
 */
static void
release_slot(int code, Datum arg)
{
	if (my_slot == NULL || shared == NULL)
		return;
	move_slot_counts(NO_ENTRY);
	my_slot = NULL;
	slot_unavailable = true;
}

static void
switch_entry(const char *name)
{
	uint32		entry = find_or_add_entry(name);

	strlcpy(my_name, name, NAMEDATALEN);
	my_entry = entry;
	if (my_slot != NULL)
		move_slot_counts(entry);
}

/*
 * Moves the slot's counts into the entry they belong to, and gives the slot
 * to new_entry.  A reader that runs meanwhile sees folds_started ahead of
 * folds_finished, or changed at its end, and reads again.  The counters'
 * increments are full barriers.
 */
static void
move_slot_counts(uint32 new_entry)
{
	uint32		old_entry = pg_atomic_read_u32(&my_slot->s.entry);
	int			level;

	pg_atomic_fetch_add_u32(&shared->folds_started, 1);
	for (level = 0; level < LEVEL_COUNT; level++)
	{
		uint64		records = pg_atomic_read_u64(&my_slot->s.records[level]);

		if (records == 0)
			continue;
		/* Never out of bounds, whatever a process that died left in the slot. */
		if (old_entry >= shared->entry_count)
			old_entry = UNTAGGED_ENTRY;
		pg_atomic_fetch_add_u64(&entries[old_entry].records[level], records);
		pg_atomic_write_u64(&my_slot->s.records[level], 0);
	}
	pg_atomic_write_u32(&my_slot->s.entry, new_entry);
	pg_atomic_fetch_add_u32(&shared->folds_finished, 1);
}

/*
 * Returns the entry of name (its first NAMEDATALEN - 1 bytes), adding it when
 * there is none, without a lock.  Two processes adding the same name at once
 * may make two entries of it; readers add them up.
 */
static uint32
find_or_add_entry(const char *name)
{
	uint32		searched = FIRST_NAMED_ENTRY;
	uint32		used;

	if (name[0] == '\0')
		return UNTAGGED_ENTRY;

	used = pg_atomic_read_u32(&shared->entries_used);
	for (;;)
	{
		uint32		i;

		used = Min(used, shared->entry_count);
		for (i = searched; i < used; i++)
		{
			NameEntry  *entry = &entries[i];

			if (pg_atomic_read_u32(&entry->ready) == 0)
				continue;
			pg_read_barrier();
			if (strncmp(entry->name, name, NAMEDATALEN - 1) == 0)
				return i;
		}
		/* An entry still being written is searched again on the next pass. */
		for (searched = FIRST_NAMED_ENTRY; searched < used; searched++)
			if (pg_atomic_read_u32(&entries[searched].ready) == 0)
				break;

		if (used >= shared->entry_count)
			return OVERFLOW_ENTRY;
		if (pg_atomic_compare_exchange_u32(&shared->entries_used, &used, used + 1))
		{
			NameEntry  *entry = &entries[used];

			strlcpy(entry->name, name, NAMEDATALEN);
			pg_write_barrier();
			pg_atomic_write_u32(&entry->ready, 1);
			return used;
		}
		/* Another process took entry "used"; used now holds the new count. */
	}
}

/*
 * Copies every entry's counts, with the live slots' added, into totals
 * (entry_count rows of LEVEL_COUNT) and the entries' names into names (rows of
 * NAMEDATALEN; an entry not ready yet gets an empty name and no counts).
 * Returns how many entries are in use.
 */
static uint32
snapshot_counts(uint64 *totals, char *names)
{
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													   READ_TIMEOUT_MS);
	int			attempt;

	for (attempt = 0;; attempt++)
	{
		uint32		started;
		uint32		used;
		uint32		i;
		int			level;

		if (attempt > 0)
		{
			CHECK_FOR_INTERRUPTS();
			if (GetCurrentTimestamp() > deadline)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("logbench_counter could not read its counts: a process has been moving its counts for %d ms",
								READ_TIMEOUT_MS)));
			if (attempt > 10)
				pg_usleep(100L);
			else
				pg_spin_delay();
		}

		started = pg_atomic_read_u32(&shared->folds_started);
		pg_read_barrier();
		if (pg_atomic_read_u32(&shared->folds_finished) != started)
			continue;
		pg_read_barrier();

		used = Min(pg_atomic_read_u32(&shared->entries_used), shared->entry_count);
		for (i = 0; i < used; i++)
		{
			NameEntry  *entry = &entries[i];
			char	   *name = names + (Size) i * NAMEDATALEN;

			name[0] = '\0';
			for (level = 0; level < LEVEL_COUNT; level++)
				totals[i * LEVEL_COUNT + level] = 0;
			if (pg_atomic_read_u32(&entry->ready) == 0)
				continue;
			pg_read_barrier();
			strlcpy(name, entry->name, NAMEDATALEN);
			for (level = 0; level < LEVEL_COUNT; level++)
				totals[i * LEVEL_COUNT + level] = pg_atomic_read_u64(&entry->records[level]);
		}
		for (i = 0; i < shared->slot_count; i++)
		{
			BackendSlot *slot = &slots[i];
			uint32		entry = pg_atomic_read_u32(&slot->s.entry);

			if (entry >= used)
				continue;
			for (level = 0; level < LEVEL_COUNT; level++)
				totals[entry * LEVEL_COUNT + level] += pg_atomic_read_u64(&slot->s.records[level]);
		}

		pg_read_barrier();
		if (pg_atomic_read_u32(&shared->folds_started) == started)
			return used;
	}
}

static void
check_loaded(void)
{
	if (shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("logbench_counter must be loaded via shared_preload_libraries"),
				 errhint("Add logbench_counter to shared_preload_libraries, last, and restart the server.")));
}

/*
 * counting_since() is when the counts started: at the server's start, and
 * again when it reinitialized shared memory after a crash.  A difference of
 * two reads holds only when both have the same counting_since().
 */
Datum
logbench_counter_counting_since(PG_FUNCTION_ARGS)
{
	check_loaded();
	PG_RETURN_TIMESTAMPTZ(shared->counting_since);
}

typedef struct NameTotals
{
	char		name[NAMEDATALEN];	/* hash key */
	uint64		records[LEVEL_COUNT];
} NameTotals;

/*
 * records() returns, for every application name and level with records, the
 * records counted since the server started: untagged records under '', those
 * of names that found the table full under NULL.  The counts only grow.
 */
Datum
logbench_counter_records(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	uint64	   *totals;
	char	   *names;
	uint32		used;
	uint32		i;
	int			level;
	HASHCTL		ctl;
	HTAB	   *by_name;
	NameTotals **order;
	uint32		distinct = 0;

	check_loaded();
	InitMaterializedSRF(fcinfo, 0);

	totals = palloc(mul_size(shared->entry_count, sizeof(uint64) * LEVEL_COUNT));
	names = palloc(mul_size(shared->entry_count, NAMEDATALEN));
	used = snapshot_counts(totals, names);

	/* Add up the entries a name may have twice, in the order of the table. */
	ctl.keysize = NAMEDATALEN;
	ctl.entrysize = sizeof(NameTotals);
	ctl.hcxt = CurrentMemoryContext;
	by_name = hash_create("logbench_counter names", Max(used, 16), &ctl,
						  HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	order = palloc(sizeof(NameTotals *) * Max(used, 1));
	for (i = FIRST_NAMED_ENTRY; i < used; i++)
	{
		char	   *name = names + (Size) i * NAMEDATALEN;
		NameTotals *named;
		bool		found;

		if (name[0] == '\0')
			continue;
		named = hash_search(by_name, name, HASH_ENTER, &found);
		if (!found)
		{
			memset(named->records, 0, sizeof(named->records));
			order[distinct++] = named;
		}
		for (level = 0; level < LEVEL_COUNT; level++)
			named->records[level] += totals[i * LEVEL_COUNT + level];
	}

	for (i = 0; i < FIRST_NAMED_ENTRY + distinct; i++)
	{
		const char *name;
		const uint64 *records;

		if (i == UNTAGGED_ENTRY)
			name = "";
		else if (i == OVERFLOW_ENTRY)
			name = NULL;
		else
			name = order[i - FIRST_NAMED_ENTRY]->name;
		if (i < FIRST_NAMED_ENTRY)
			records = totals + (Size) i * LEVEL_COUNT;
		else
			records = order[i - FIRST_NAMED_ENTRY]->records;

		for (level = 0; level < LEVEL_COUNT; level++)
		{
			Datum		values[3];
			bool		nulls[3] = {false, false, false};

			if (records[level] == 0)
				continue;
			if (name == NULL)
				nulls[0] = true;
			else
				values[0] = CStringGetTextDatum(name);
			values[1] = CStringGetTextDatum(level_names[level]);
			values[2] = Int64GetDatum((int64) records[level]);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	}

	hash_destroy(by_name);
	return (Datum) 0;
}
