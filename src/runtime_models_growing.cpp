// ccf — concurrent cuckoo filters.
// runtime_models_growing.cpp: ccf::runtime_filter's growing filters, compiled once for the
// programs that link ccf_runtime_models (CCF_RUNTIME_FILTER_PREBUILT).
#include "ccf/runtime_filter.hpp"

namespace ccf::detail {

template std::unique_ptr<runtime_model> growing_model_for(filter_kind,
                                                          const model_source<prebuilt_allocator>&);

}  // namespace ccf::detail
