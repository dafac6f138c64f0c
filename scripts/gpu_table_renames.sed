# The CUDA driver table's names -> the GPU layer's (csrc/backends/gpu/gpu_internal.h),
# for code that still calls the table by its CUDA names (sed -E -f this file; then
# clang-format). Driver names inside string literals (messages) are left as they are.
# Types and functions of the device:
s/\btack__cuda_driver\b/tack__gpu_driver/g
s/\btack__cuda_state\b/tack__gpu_state/g
s/\btack__cuda_guard\b/tack__gpu_guard/g
s/\btack__cuda_api\b/tack__gpu_api/g
s/\btack__cuda_enter\b/tack__gpu_enter/g
s/\btack__cuda_leave\b/tack__gpu_leave/g
s/\btack__cuda_check\b/tack__gpu_check/g
s/\btack__cuda_error\b/tack__gpu_error/g
s/\btack__cuda_alloc_queued\b/tack__gpu_alloc_queued/g
s/\btack__cuda_free_queued\b/tack__gpu_free_queued/g
s/\btack__cuda_handoff\b/tack__gpu_handoff/g
s/\btack__cuda_order\b/tack__gpu_order/g
s/\btack__cuda_vmm_alloc\b/tack__gpu_vmm_alloc/g
s/\btack__cuda_vmm_free\b/tack__gpu_vmm_free/g
# Driver types:
s/\btcu_result\b/tack__gpu_result/g
s/\btcu_device_attribute\b/tack__gpu_attribute/g
s/\btcu_device\b/tack__gpu_device/g
s/\btcu_deviceptr\b/tack__gpu_ptr/g
s/\btcu_mem_handle\b/tack__gpu_mem_handle/g
s/\btcu_context\b/tack__gpu_context/g
s/\btcu_stream\b/tack__gpu_stream/g
s/\btcu_event\b/tack__gpu_event/g
s/\btcu_module\b/tack__gpu_module/g
s/\btcu_function\b/tack__gpu_function/g
s/\bTCU_SUCCESS\b/TACK__GPU_SUCCESS/g
# The attributes a launch reads:
s/\bTCU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR\b/TACK__GPU_ATTRIBUTE_COMPUTE_MAJOR/g
s/\bTCU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR\b/TACK__GPU_ATTRIBUTE_COMPUTE_MINOR/g
s/\bTCU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT\b/TACK__GPU_ATTRIBUTE_MULTIPROCESSORS/g
s/\bTCU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR\b/TACK__GPU_ATTRIBUTE_THREADS_PER_MULTIPROCESSOR/g
# Table entries reached as api->X or s->drv->api.X (same arguments unless noted):
s/(\.|->)cuDeviceGetCount\b/\1device_count/g
s/(\.|->)cuDeviceGet\b/\1device_get/g
s/(\.|->)cuDeviceGetAttribute\b/\1device_attribute/g
s/(\.|->)cuDevicePrimaryCtxRetain\b/\1primary_context_retain/g
s/(\.|->)cuDevicePrimaryCtxRelease\b/\1primary_context_release/g
s/(\.|->)cuCtxGetCurrent\b/\1context_get_current/g
s/(\.|->)cuCtxSetCurrent\b/\1context_set_current/g
s/(\.|->)cuCtxPushCurrent\b/\1context_push/g
s/(\.|->)cuCtxPopCurrent\b/\1context_pop/g
s/(\.|->)cuCtxGetDevice\b/\1context_get_device/g
s/(\.|->)cuStreamDestroy\b/\1stream_destroy/g
s/(\.|->)cuStreamSynchronize\b/\1stream_synchronize/g
s/(\.|->)cuEventDestroy\b/\1event_destroy/g
s/(\.|->)cuEventRecord\b/\1event_record/g
s/(\.|->)cuMemAlloc\b/\1mem_alloc/g
s/(\.|->)cuMemFree\b/\1mem_free/g
s/(\.|->)cuMemAllocAsync\b/\1mem_alloc_async/g
s/(\.|->)cuMemFreeAsync\b/\1mem_free_async/g
s/(\.|->)cuMemcpyHtoDAsync\b/\1copy_htod_async/g
s/(\.|->)cuMemcpyDtoHAsync\b/\1copy_dtoh_async/g
s/(\.|->)cuMemcpyDtoDAsync\b/\1copy_dtod_async/g
s/(\.|->)cuMemcpyPeerAsync\b/\1copy_peer_async/g
s/(\.|->)cuMemAddressFree\b/\1vmm_address_free/g
s/(\.|->)cuMemUnmap\b/\1vmm_unmap/g
s/(\.|->)cuMemRelease\b/\1vmm_release/g
s/(\.|->)cuModuleLoadData\b/\1module_load/g
s/(\.|->)cuModuleUnload\b/\1module_unload/g
s/(\.|->)cuModuleGetFunction\b/\1module_get_function/g
s/(\.|->)cuLaunchKernel\b/\1launch_kernel/g
s/(\.|->)cuOccupancyMaxPotentialBlockSize\b/\1occupancy_max_block_size/g
# Entries whose arguments changed shape (not renamed by this file; rewrite by hand):
#   cuStreamCreate(&s, TCU_STREAM_NON_BLOCKING)       -> stream_create(&s)
#   cuEventCreate(&e, TCU_EVENT_DISABLE_TIMING)       -> event_create(&e)
#   cuStreamWaitEvent(stream, event, 0)               -> stream_wait_event(stream, event)
#   cuMemsetD8/D16/D32Async(p, v, n, stream)          -> memset_async(p, v, 1/2/4, n, stream)
#   cuMemcpy2DAsync(&tcu_memcpy2d, stream)            -> copy_2d_async(dst, dst_pitch, src, src_pitch, width, height, stream)
#   cuPointerGetAttributes(3, attrs, data, ptr)       -> pointer_info(ptr, &tack__gpu_pointer_info)
#   cuDeviceGetAttribute x3, cuDeviceGetUuid, cuMemGetAllocationGranularity
#                                                     -> device_info(device, &tack__gpu_device_info)
#   cuMemCreate/cuMemAddressReserve/cuMemMap/cuMemSetAccess/cuMemExportToShareableHandle
#                                                     -> vmm_create/vmm_reserve/vmm_map/vmm_set_access/vmm_export_fd
#   cuGetErrorName/cuGetErrorString                   -> error_name(rc)/error_text(rc), never NULL
#   tcu_is_sticky(rc)                                 -> api.classify(rc) == TACK__GPU_STICKY
# The stand-in's hook keeps the driver's own types (a function the stand-in defines):
s/^typedef tack__gpu_result \(\*module_source_fn\)\(tack__gpu_module, const char \*\);$/typedef tcu_result (*module_source_fn)(tcu_module, const char *);/
s/give\(mod, k->cuda_source\)/give((tcu_module)mod, k->cuda_source)/
