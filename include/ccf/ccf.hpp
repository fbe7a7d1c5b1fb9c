// ccf — concurrent cuckoo filters. This header includes every public ccf header.
#pragma once

#include "ccf/bloom_filter.hpp"
#include "ccf/concurrent_cuckoo_filter.hpp"
#include "ccf/config.hpp"
#include "ccf/cuckoo_filter.hpp"
#include "ccf/hash.hpp"
#include "ccf/lockfree_cuckoo_filter.hpp"
#include "ccf/params.hpp"
