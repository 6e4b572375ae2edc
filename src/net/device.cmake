# net device API. devsvc.c (service thread, host handles) needs no CUDA and
# goes into the plain net library; device.cu (pins and maps the rings for a
# GPU) is built only when nvcc is present, as gmux_net_cuda.
target_sources(gmux_net_obj PRIVATE ${CMAKE_CURRENT_LIST_DIR}/devsvc.c)
if(GMUX_HAVE_CUDA)
  add_library(gmux_net_cuda STATIC ${CMAKE_CURRENT_LIST_DIR}/device.cu)
  target_include_directories(gmux_net_cuda PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(gmux_net_cuda PUBLIC gmux_net_static CUDA::cudart_static)
endif()
target_sources(gmux_net_obj PRIVATE ${CMAKE_CURRENT_LIST_DIR}/devstage.c)
