// ccf — concurrent cuckoo filters. This header includes every public ccf header.
#pragma once

#include "ccf/allocator.hpp"
#include "ccf/bloom_filter.hpp"
#include "ccf/concurrent_cuckoo_filter.hpp"
#include "ccf/config.hpp"
#include "ccf/cuckoo_filter.hpp"
#include "ccf/filter_file.hpp"
#include "ccf/growing_cuckoo_filter.hpp"
#include "ccf/hash.hpp"
#include "ccf/lockfree_cuckoo_filter.hpp"
#include "ccf/params.hpp"
#include "ccf/runtime_filter.hpp"
#include "ccf/version.hpp"
