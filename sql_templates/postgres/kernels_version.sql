SELECT se_kernels_version()
