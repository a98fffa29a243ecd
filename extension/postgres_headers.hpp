// The only place the extension includes PostgreSQL headers: C declarations, postgres.h first.
// Compiled with -isystem so the server headers' own warnings never hide ours.
#pragma once

extern "C" {
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
}

// core/ never includes this file: CMake builds the core (for GoogleTest) without any PostgreSQL include
// path, so a PostgreSQL include sneaking into core/ fails that build.
