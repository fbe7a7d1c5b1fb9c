// ccf — concurrent cuckoo filters.
// runtime_models_growing.cpp: ccf::runtime_filter's growing filters, new and loaded, compiled once
// for the programs that link ccf_runtime_models (CCF_RUNTIME_FILTER_PREBUILT).
#include "ccf/runtime_filter.hpp"

namespace ccf::detail {

template std::unique_ptr<runtime_model> new_growing_model(filter_kind, std::size_t, double,
                                                          const growth_options&,
                                                          const prebuilt_allocator&);
template std::unique_ptr<runtime_model> load_growing_model(filter_kind, filter_source&,
                                                           const prebuilt_allocator&);

}  // namespace ccf::detail
