// ccf — concurrent cuckoo filters.
// runtime_models_8.cpp: ccf::runtime_filter's filter types of 8-bit fingerprints, new and loaded,
// compiled once for the programs that link ccf_runtime_models (CCF_RUNTIME_FILTER_PREBUILT).
#include "ccf/runtime_filter.hpp"

namespace ccf::detail {

template std::unique_ptr<runtime_model> new_static_model<8>(unsigned, filter_kind, std::size_t,
                                                            std::uint64_t, std::size_t,
                                                            const prebuilt_allocator&);
template std::unique_ptr<runtime_model> load_static_model<8>(unsigned, filter_kind, filter_source&,
                                                             const prebuilt_allocator&);

}  // namespace ccf::detail
