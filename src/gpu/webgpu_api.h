/*
 * webgpu_api.h: pxl's own declarations of the part of the standard webgpu.h
 * C API that pxl uses.
 *
 * Written for pxl from the published contract of webgpu.h (stable since
 * September 2025): the enum values and the field order of each struct are
 * what the ABI fixes, so they follow the contract; everything else (names of
 * the table, comments, which subset is declared) is ours. Only src/gpu/ may
 * include this file. Nothing here is linked: every function is resolved at
 * run time by loader.c into a pxl_wgpu_fns table.
 *
 * Values that are specific to the Dawn build pxl ships (bun-webgpu-linux-x64
 * 0.1.7) carry the DAWN_ prefix; Dawn renumbered them in later builds.
 */
#ifndef PXL_GPU_WEBGPU_API_H
#define PXL_GPU_WEBGPU_API_H

#include <stddef.h>
#include <stdint.h>

/* Opaque object handles. */
typedef struct WGPUAdapterImpl *WGPUAdapter;
typedef struct WGPUBindGroupImpl *WGPUBindGroup;
typedef struct WGPUBindGroupLayoutImpl *WGPUBindGroupLayout;
typedef struct WGPUBufferImpl *WGPUBuffer;
typedef struct WGPUCommandBufferImpl *WGPUCommandBuffer;
typedef struct WGPUCommandEncoderImpl *WGPUCommandEncoder;
typedef struct WGPUComputePassEncoderImpl *WGPUComputePassEncoder;
typedef struct WGPUComputePipelineImpl *WGPUComputePipeline;
typedef struct WGPUDeviceImpl *WGPUDevice;
typedef struct WGPUInstanceImpl *WGPUInstance;
typedef struct WGPUPipelineLayoutImpl *WGPUPipelineLayout;
typedef struct WGPUQuerySetImpl *WGPUQuerySet;
typedef struct WGPUQueueImpl *WGPUQueue;
typedef struct WGPUSamplerImpl *WGPUSampler;
typedef struct WGPUShaderModuleImpl *WGPUShaderModule;
typedef struct WGPUSurfaceImpl *WGPUSurface;
typedef struct WGPUTextureViewImpl *WGPUTextureView;

typedef uint32_t WGPUBool;
typedef uint64_t WGPUFlags64;

#define WGPU_STRLEN SIZE_MAX
#define WGPU_WHOLE_SIZE UINT64_MAX
#define WGPU_LIMIT_U32_UNDEFINED UINT32_MAX
#define WGPU_LIMIT_U64_UNDEFINED UINT64_MAX

/* Enums are declared as uint32_t-sized integers plus named constants, so that
 * values outside our list (newer features, Dawn extensions) stay legal. */
typedef uint32_t WGPUSType;
enum {
    WGPUSType_ShaderSourceWGSL = 0x00000002,
    DAWN_SType_CacheDeviceDescriptor = 0x00050007,
    DAWN_SType_TogglesDescriptor = 0x0005000A,
    DAWN_SType_AdapterPropertiesMemoryHeaps = 0x00050013,
    DAWN_SType_AdapterPropertiesSubgroupMatrixConfigs = 0x0005003B
};

typedef uint32_t WGPUBackendType;
enum {
    WGPUBackendType_Undefined = 0,
    WGPUBackendType_Null = 1,
    WGPUBackendType_WebGPU = 2,
    WGPUBackendType_D3D11 = 3,
    WGPUBackendType_D3D12 = 4,
    WGPUBackendType_Metal = 5,
    WGPUBackendType_Vulkan = 6,
    WGPUBackendType_OpenGL = 7,
    WGPUBackendType_OpenGLES = 8
};

typedef uint32_t WGPUAdapterType;
enum {
    WGPUAdapterType_DiscreteGPU = 1,
    WGPUAdapterType_IntegratedGPU = 2,
    WGPUAdapterType_CPU = 3,
    WGPUAdapterType_Unknown = 4
};

typedef uint32_t WGPUFeatureLevel;
enum {
    WGPUFeatureLevel_Undefined = 0,
    WGPUFeatureLevel_Compatibility = 1,
    WGPUFeatureLevel_Core = 2
};

/*
 * Feature values: the pinned Dawn build still uses Dawn's numbering from
 * before webgpu.h was declared stable (timestamp-query = 3, shader-f16 = 0xA,
 * subgroups = 0x11, core-features-and-limits = 0x12); the stable header
 * renumbered them (9, 0xB, 0x12, 1). Checked on this build: requesting 3
 * enables timestamp query sets, 0x11 enables `enable subgroups;`. These
 * values hold for this library only.
 */
typedef uint32_t WGPUFeatureName;
enum {
    WGPUFeatureName_TimestampQuery = 0x03,
    WGPUFeatureName_ShaderF16 = 0x0A,
    WGPUFeatureName_Subgroups = 0x11,
    WGPUFeatureName_CoreFeaturesAndLimits = 0x12,
    DAWN_FeatureName_AdapterPropertiesMemoryHeaps = 0x50015,
    DAWN_FeatureName_SubgroupMatrix = 0x50037 /* visible with the toggle allow_unsafe_apis */
};

typedef uint32_t WGPUInstanceFeatureName;
enum { WGPUInstanceFeatureName_TimedWaitAny = 1 };

typedef uint32_t WGPUPowerPreference;
enum { WGPUPowerPreference_HighPerformance = 2 };

typedef uint32_t WGPUCallbackMode;
enum {
    WGPUCallbackMode_WaitAnyOnly = 1,
    WGPUCallbackMode_AllowProcessEvents = 2,
    WGPUCallbackMode_AllowSpontaneous = 3
};

typedef uint32_t WGPURequestAdapterStatus; /* Success = 1 */
typedef uint32_t WGPURequestDeviceStatus;  /* Success = 1 */
typedef uint32_t WGPUMapAsyncStatus;       /* Success = 1 */
typedef uint32_t WGPUQueueWorkDoneStatus;  /* Success = 1 */
typedef uint32_t WGPUCompilationInfoRequestStatus; /* Success = 1 */
typedef uint32_t WGPUPopErrorScopeStatus;  /* Success = 1 */
typedef uint32_t WGPUStatus;               /* Success = 1 */
#define PXL_WGPU_SUCCESS 1u

typedef uint32_t WGPUErrorType;
enum {
    WGPUErrorType_NoError = 1,
    WGPUErrorType_Validation = 2,
    WGPUErrorType_OutOfMemory = 3,
    WGPUErrorType_Internal = 4,
    WGPUErrorType_Unknown = 5
};

typedef uint32_t WGPUErrorFilter;
enum {
    WGPUErrorFilter_Validation = 1,
    WGPUErrorFilter_OutOfMemory = 2,
    WGPUErrorFilter_Internal = 3
};

typedef uint32_t WGPUDeviceLostReason;
enum {
    WGPUDeviceLostReason_Unknown = 1,
    WGPUDeviceLostReason_Destroyed = 2,
    WGPUDeviceLostReason_CallbackCancelled = 3,
    WGPUDeviceLostReason_FailedCreation = 4
};

typedef uint32_t WGPUWaitStatus;
enum {
    WGPUWaitStatus_Success = 1,
    WGPUWaitStatus_TimedOut = 2,
    WGPUWaitStatus_Error = 3
};

typedef uint32_t WGPUQueryType;
enum { WGPUQueryType_Timestamp = 2 };

typedef uint32_t WGPUCompilationMessageType;
enum {
    WGPUCompilationMessageType_Error = 1,
    WGPUCompilationMessageType_Warning = 2,
    WGPUCompilationMessageType_Info = 3
};

typedef WGPUFlags64 WGPUBufferUsage;
#define WGPUBufferUsage_MapRead ((WGPUBufferUsage)0x0001)
#define WGPUBufferUsage_MapWrite ((WGPUBufferUsage)0x0002)
#define WGPUBufferUsage_CopySrc ((WGPUBufferUsage)0x0004)
#define WGPUBufferUsage_CopyDst ((WGPUBufferUsage)0x0008)
#define WGPUBufferUsage_Uniform ((WGPUBufferUsage)0x0040)
#define WGPUBufferUsage_Storage ((WGPUBufferUsage)0x0080)
#define WGPUBufferUsage_Indirect ((WGPUBufferUsage)0x0100)
#define WGPUBufferUsage_QueryResolve ((WGPUBufferUsage)0x0200)

typedef WGPUFlags64 WGPUMapMode;
#define WGPUMapMode_Read ((WGPUMapMode)0x1)
#define WGPUMapMode_Write ((WGPUMapMode)0x2)

/* Structs: field order and types fixed by the C ABI of webgpu.h. */
typedef struct WGPUStringView {
    const char *data;
    size_t length; /* WGPU_STRLEN: NUL-terminated */
} WGPUStringView;

typedef struct WGPUChainedStruct {
    struct WGPUChainedStruct *next;
    WGPUSType sType;
} WGPUChainedStruct;

typedef struct WGPUFuture {
    uint64_t id;
} WGPUFuture;

typedef struct WGPUFutureWaitInfo {
    WGPUFuture future;
    WGPUBool completed;
} WGPUFutureWaitInfo;

typedef struct WGPUInstanceLimits {
    WGPUChainedStruct *nextInChain;
    size_t timedWaitAnyMaxCount;
} WGPUInstanceLimits;

typedef struct WGPUInstanceDescriptor {
    WGPUChainedStruct *nextInChain;
    size_t requiredFeatureCount;
    const WGPUInstanceFeatureName *requiredFeatures;
    const WGPUInstanceLimits *requiredLimits;
} WGPUInstanceDescriptor;

/* Dawn extension, chained on adapter options or device descriptors. */
typedef struct DawnTogglesDescriptor {
    WGPUChainedStruct chain;
    size_t enabledToggleCount;
    const char *const *enabledToggles;
    size_t disabledToggleCount;
    const char *const *disabledToggles;
} DawnTogglesDescriptor;

/*
 * Dawn extension, chained on device descriptors: Dawn's persistent cache of
 * compiled shaders and pipelines, stored by the embedder. load is called
 * with value NULL to ask for the size (0: not cached), then with a buffer of
 * that size; it returns the bytes copied.
 */
typedef size_t (*DawnLoadCacheDataFunction)(const void *key, size_t key_size, void *value, size_t value_size,
                                            void *userdata);
typedef void (*DawnStoreCacheDataFunction)(const void *key, size_t key_size, const void *value,
                                           size_t value_size, void *userdata);
typedef struct DawnCacheDeviceDescriptor {
    WGPUChainedStruct chain;
    WGPUStringView isolationKey;
    DawnLoadCacheDataFunction loadDataFunction;
    DawnStoreCacheDataFunction storeDataFunction;
    void *functionUserdata;
} DawnCacheDeviceDescriptor;

typedef struct WGPURequestAdapterOptions {
    WGPUChainedStruct *nextInChain;
    WGPUFeatureLevel featureLevel;
    WGPUPowerPreference powerPreference;
    WGPUBool forceFallbackAdapter;
    WGPUBackendType backendType;
    WGPUSurface compatibleSurface;
} WGPURequestAdapterOptions;

typedef void (*WGPURequestAdapterCallback)(WGPURequestAdapterStatus status, WGPUAdapter adapter,
                                           WGPUStringView message, void *userdata1,
                                           void *userdata2);
typedef struct WGPURequestAdapterCallbackInfo {
    WGPUChainedStruct *nextInChain;
    WGPUCallbackMode mode;
    WGPURequestAdapterCallback callback;
    void *userdata1;
    void *userdata2;
} WGPURequestAdapterCallbackInfo;

typedef struct WGPUAdapterInfo {
    WGPUChainedStruct *nextInChain;
    WGPUStringView vendor;
    WGPUStringView architecture;
    WGPUStringView device;
    WGPUStringView description;
    WGPUBackendType backendType;
    WGPUAdapterType adapterType;
    uint32_t vendorID;
    uint32_t deviceID;
    uint32_t subgroupMinSize;
    uint32_t subgroupMaxSize;
} WGPUAdapterInfo;

/* Dawn extension, chained on WGPUAdapterInfo: the cooperative-matrix shapes.
 * Component types: f32 = 1, f16 = 2, u32 = 3, i32 = 4, u8 = 5, i8 = 6. */
typedef struct DawnSubgroupMatrixConfig {
    uint32_t componentType;
    uint32_t resultComponentType;
    uint32_t M, N, K;
} DawnSubgroupMatrixConfig;

typedef struct DawnAdapterPropertiesSubgroupMatrixConfigs {
    WGPUChainedStruct chain;
    size_t configCount;
    const DawnSubgroupMatrixConfig *configs;
} DawnAdapterPropertiesSubgroupMatrixConfigs;

/* Dawn extension, chained on WGPUAdapterInfo when the adapter has
 * DAWN_FeatureName_AdapterPropertiesMemoryHeaps: the adapter's memory heaps.
 * Dawn allocates the array; wgpuAdapterPropertiesMemoryHeapsFreeMembers frees
 * it (resolved as optional, see pxl_gpu.heaps_free). */
#define DAWN_HEAP_PROPERTY_DEVICE_LOCAL ((WGPUFlags64)0x1)
typedef struct DawnMemoryHeapInfo {
    WGPUFlags64 properties; /* DAWN_HEAP_PROPERTY_* bits */
    uint64_t size;
} DawnMemoryHeapInfo;

typedef struct DawnAdapterPropertiesMemoryHeaps {
    WGPUChainedStruct chain;
    size_t heapCount;
    const DawnMemoryHeapInfo *heapInfo;
} DawnAdapterPropertiesMemoryHeaps;

typedef struct WGPULimits {
    WGPUChainedStruct *nextInChain;
    uint32_t maxTextureDimension1D;
    uint32_t maxTextureDimension2D;
    uint32_t maxTextureDimension3D;
    uint32_t maxTextureArrayLayers;
    uint32_t maxBindGroups;
    uint32_t maxBindGroupsPlusVertexBuffers;
    uint32_t maxBindingsPerBindGroup;
    uint32_t maxDynamicUniformBuffersPerPipelineLayout;
    uint32_t maxDynamicStorageBuffersPerPipelineLayout;
    uint32_t maxSampledTexturesPerShaderStage;
    uint32_t maxSamplersPerShaderStage;
    uint32_t maxStorageBuffersPerShaderStage;
    uint32_t maxStorageTexturesPerShaderStage;
    uint32_t maxUniformBuffersPerShaderStage;
    uint64_t maxUniformBufferBindingSize;
    uint64_t maxStorageBufferBindingSize;
    uint32_t minUniformBufferOffsetAlignment;
    uint32_t minStorageBufferOffsetAlignment;
    uint32_t maxVertexBuffers;
    uint64_t maxBufferSize;
    uint32_t maxVertexAttributes;
    uint32_t maxVertexBufferArrayStride;
    uint32_t maxInterStageShaderVariables;
    uint32_t maxColorAttachments;
    uint32_t maxColorAttachmentBytesPerSample;
    uint32_t maxComputeWorkgroupStorageSize;
    uint32_t maxComputeInvocationsPerWorkgroup;
    uint32_t maxComputeWorkgroupSizeX;
    uint32_t maxComputeWorkgroupSizeY;
    uint32_t maxComputeWorkgroupSizeZ;
    uint32_t maxComputeWorkgroupsPerDimension;
    uint32_t maxImmediateSize;
} WGPULimits;

typedef struct WGPUSupportedFeatures {
    size_t featureCount;
    const WGPUFeatureName *features;
} WGPUSupportedFeatures;

typedef struct WGPUQueueDescriptor {
    WGPUChainedStruct *nextInChain;
    WGPUStringView label;
} WGPUQueueDescriptor;

typedef void (*WGPUDeviceLostCallback)(const WGPUDevice *device, WGPUDeviceLostReason reason,
                                       WGPUStringView message, void *userdata1, void *userdata2);
typedef struct WGPUDeviceLostCallbackInfo {
    WGPUChainedStruct *nextInChain;
    WGPUCallbackMode mode;
    WGPUDeviceLostCallback callback;
    void *userdata1;
    void *userdata2;
} WGPUDeviceLostCallbackInfo;

typedef void (*WGPUUncapturedErrorCallback)(const WGPUDevice *device, WGPUErrorType type,
                                            WGPUStringView message, void *userdata1,
                                            void *userdata2);
typedef struct WGPUUncapturedErrorCallbackInfo {
    WGPUChainedStruct *nextInChain;
    WGPUUncapturedErrorCallback callback;
    void *userdata1;
    void *userdata2;
} WGPUUncapturedErrorCallbackInfo;

typedef struct WGPUDeviceDescriptor {
    WGPUChainedStruct *nextInChain;
    WGPUStringView label;
    size_t requiredFeatureCount;
    const WGPUFeatureName *requiredFeatures;
    const WGPULimits *requiredLimits;
    WGPUQueueDescriptor defaultQueue;
    WGPUDeviceLostCallbackInfo deviceLostCallbackInfo;
    WGPUUncapturedErrorCallbackInfo uncapturedErrorCallbackInfo;
} WGPUDeviceDescriptor;

typedef void (*WGPURequestDeviceCallback)(WGPURequestDeviceStatus status, WGPUDevice device,
                                          WGPUStringView message, void *userdata1,
                                          void *userdata2);
typedef struct WGPURequestDeviceCallbackInfo {
    WGPUChainedStruct *nextInChain;
    WGPUCallbackMode mode;
    WGPURequestDeviceCallback callback;
    void *userdata1;
    void *userdata2;
} WGPURequestDeviceCallbackInfo;

typedef struct WGPUBufferDescriptor {
    WGPUChainedStruct *nextInChain;
    WGPUStringView label;
    WGPUBufferUsage usage;
    uint64_t size;
    WGPUBool mappedAtCreation;
} WGPUBufferDescriptor;

typedef void (*WGPUBufferMapCallback)(WGPUMapAsyncStatus status, WGPUStringView message,
                                      void *userdata1, void *userdata2);
typedef struct WGPUBufferMapCallbackInfo {
    WGPUChainedStruct *nextInChain;
    WGPUCallbackMode mode;
    WGPUBufferMapCallback callback;
    void *userdata1;
    void *userdata2;
} WGPUBufferMapCallbackInfo;

typedef void (*WGPUQueueWorkDoneCallback)(WGPUQueueWorkDoneStatus status, WGPUStringView message,
                                          void *userdata1, void *userdata2);
typedef struct WGPUQueueWorkDoneCallbackInfo {
    WGPUChainedStruct *nextInChain;
    WGPUCallbackMode mode;
    WGPUQueueWorkDoneCallback callback;
    void *userdata1;
    void *userdata2;
} WGPUQueueWorkDoneCallbackInfo;

typedef struct WGPUShaderSourceWGSL {
    WGPUChainedStruct chain;
    WGPUStringView code;
} WGPUShaderSourceWGSL;

typedef struct WGPUShaderModuleDescriptor {
    WGPUChainedStruct *nextInChain;
    WGPUStringView label;
} WGPUShaderModuleDescriptor;

typedef struct WGPUCompilationMessage {
    WGPUChainedStruct *nextInChain;
    WGPUStringView message;
    WGPUCompilationMessageType type;
    uint64_t lineNum;
    uint64_t linePos;
    uint64_t offset;
    uint64_t length;
} WGPUCompilationMessage;

typedef struct WGPUCompilationInfo {
    WGPUChainedStruct *nextInChain;
    size_t messageCount;
    const WGPUCompilationMessage *messages;
} WGPUCompilationInfo;

typedef void (*WGPUCompilationInfoCallback)(WGPUCompilationInfoRequestStatus status,
                                            const WGPUCompilationInfo *info, void *userdata1,
                                            void *userdata2);
typedef struct WGPUCompilationInfoCallbackInfo {
    WGPUChainedStruct *nextInChain;
    WGPUCallbackMode mode;
    WGPUCompilationInfoCallback callback;
    void *userdata1;
    void *userdata2;
} WGPUCompilationInfoCallbackInfo;

typedef void (*WGPUPopErrorScopeCallback)(WGPUPopErrorScopeStatus status, WGPUErrorType type,
                                          WGPUStringView message, void *userdata1,
                                          void *userdata2);
typedef struct WGPUPopErrorScopeCallbackInfo {
    WGPUChainedStruct *nextInChain;
    WGPUCallbackMode mode;
    WGPUPopErrorScopeCallback callback;
    void *userdata1;
    void *userdata2;
} WGPUPopErrorScopeCallbackInfo;

typedef struct WGPUConstantEntry {
    WGPUChainedStruct *nextInChain;
    WGPUStringView key;
    double value;
} WGPUConstantEntry;

typedef struct WGPUComputeState {
    WGPUChainedStruct *nextInChain;
    WGPUShaderModule module;
    WGPUStringView entryPoint;
    size_t constantCount;
    const WGPUConstantEntry *constants;
} WGPUComputeState;

typedef struct WGPUComputePipelineDescriptor {
    WGPUChainedStruct *nextInChain;
    WGPUStringView label;
    WGPUPipelineLayout layout; /* NULL: layout derived from the shader */
    WGPUComputeState compute;
} WGPUComputePipelineDescriptor;

typedef struct WGPUBindGroupEntry {
    WGPUChainedStruct *nextInChain;
    uint32_t binding;
    WGPUBuffer buffer;
    uint64_t offset;
    uint64_t size;
    WGPUSampler sampler;
    WGPUTextureView textureView;
} WGPUBindGroupEntry;

typedef struct WGPUBindGroupDescriptor {
    WGPUChainedStruct *nextInChain;
    WGPUStringView label;
    WGPUBindGroupLayout layout;
    size_t entryCount;
    const WGPUBindGroupEntry *entries;
} WGPUBindGroupDescriptor;

typedef struct WGPUCommandEncoderDescriptor {
    WGPUChainedStruct *nextInChain;
    WGPUStringView label;
} WGPUCommandEncoderDescriptor;

typedef struct WGPUCommandBufferDescriptor {
    WGPUChainedStruct *nextInChain;
    WGPUStringView label;
} WGPUCommandBufferDescriptor;

typedef struct WGPUPassTimestampWrites {
    WGPUChainedStruct *nextInChain;
    WGPUQuerySet querySet;
    uint32_t beginningOfPassWriteIndex;
    uint32_t endOfPassWriteIndex;
} WGPUPassTimestampWrites;
#define WGPU_QUERY_SET_INDEX_UNDEFINED UINT32_MAX

typedef struct WGPUComputePassDescriptor {
    WGPUChainedStruct *nextInChain;
    WGPUStringView label;
    const WGPUPassTimestampWrites *timestampWrites;
} WGPUComputePassDescriptor;

typedef struct WGPUQuerySetDescriptor {
    WGPUChainedStruct *nextInChain;
    WGPUStringView label;
    WGPUQueryType type;
    uint32_t count;
} WGPUQuerySetDescriptor;

/*
 * X-macro list of every entry point pxl resolves: (return type, name, params).
 * loader.c turns it into the pxl_wgpu_fns table; a missing symbol is an error
 * that names the symbol.
 */
#define PXL_WGPU_FUNCTIONS(X)                                                                     \
    X(WGPUInstance, CreateInstance, (const WGPUInstanceDescriptor *descriptor))                   \
    X(WGPUFuture, InstanceRequestAdapter,                                                         \
      (WGPUInstance instance, const WGPURequestAdapterOptions *options,                           \
       WGPURequestAdapterCallbackInfo callbackInfo))                                              \
    X(WGPUWaitStatus, InstanceWaitAny,                                                            \
      (WGPUInstance instance, size_t futureCount, WGPUFutureWaitInfo *futures,                    \
       uint64_t timeoutNS))                                                                       \
    X(void, InstanceProcessEvents, (WGPUInstance instance))                                       \
    X(void, InstanceRelease, (WGPUInstance instance))                                             \
    X(WGPUStatus, AdapterGetInfo, (WGPUAdapter adapter, WGPUAdapterInfo * info))                  \
    X(WGPUStatus, AdapterGetLimits, (WGPUAdapter adapter, WGPULimits * limits))                   \
    X(void, AdapterGetFeatures, (WGPUAdapter adapter, WGPUSupportedFeatures * features))          \
    X(WGPUBool, AdapterHasFeature, (WGPUAdapter adapter, WGPUFeatureName feature))                \
    X(WGPUFuture, AdapterRequestDevice,                                                           \
      (WGPUAdapter adapter, const WGPUDeviceDescriptor *descriptor,                               \
       WGPURequestDeviceCallbackInfo callbackInfo))                                               \
    X(void, AdapterRelease, (WGPUAdapter adapter))                                                \
    X(void, AdapterInfoFreeMembers, (WGPUAdapterInfo adapterInfo))                                \
    X(void, SupportedFeaturesFreeMembers, (WGPUSupportedFeatures supportedFeatures))              \
    X(WGPUStatus, DeviceGetLimits, (WGPUDevice device, WGPULimits * limits))                      \
    X(WGPUBool, DeviceHasFeature, (WGPUDevice device, WGPUFeatureName feature))                   \
    X(WGPUQueue, DeviceGetQueue, (WGPUDevice device))                                             \
    X(WGPUBuffer, DeviceCreateBuffer, (WGPUDevice device, const WGPUBufferDescriptor *descriptor)) \
    X(WGPUShaderModule, DeviceCreateShaderModule,                                                 \
      (WGPUDevice device, const WGPUShaderModuleDescriptor *descriptor))                          \
    X(WGPUComputePipeline, DeviceCreateComputePipeline,                                           \
      (WGPUDevice device, const WGPUComputePipelineDescriptor *descriptor))                       \
    X(WGPUBindGroup, DeviceCreateBindGroup,                                                       \
      (WGPUDevice device, const WGPUBindGroupDescriptor *descriptor))                             \
    X(WGPUCommandEncoder, DeviceCreateCommandEncoder,                                             \
      (WGPUDevice device, const WGPUCommandEncoderDescriptor *descriptor))                        \
    X(WGPUQuerySet, DeviceCreateQuerySet,                                                         \
      (WGPUDevice device, const WGPUQuerySetDescriptor *descriptor))                              \
    X(void, DevicePushErrorScope, (WGPUDevice device, WGPUErrorFilter filter))                    \
    X(WGPUFuture, DevicePopErrorScope,                                                            \
      (WGPUDevice device, WGPUPopErrorScopeCallbackInfo callbackInfo))                            \
    X(void, DeviceDestroy, (WGPUDevice device))                                                   \
    X(void, DeviceRelease, (WGPUDevice device))                                                   \
    X(void, QueueSubmit, (WGPUQueue queue, size_t commandCount, const WGPUCommandBuffer *commands)) \
    X(void, QueueWriteBuffer,                                                                     \
      (WGPUQueue queue, WGPUBuffer buffer, uint64_t bufferOffset, const void *data, size_t size)) \
    X(WGPUFuture, QueueOnSubmittedWorkDone,                                                       \
      (WGPUQueue queue, WGPUQueueWorkDoneCallbackInfo callbackInfo))                              \
    X(void, QueueRelease, (WGPUQueue queue))                                                      \
    X(WGPUFuture, BufferMapAsync,                                                                 \
      (WGPUBuffer buffer, WGPUMapMode mode, size_t offset, size_t size,                           \
       WGPUBufferMapCallbackInfo callbackInfo))                                                   \
    X(const void *, BufferGetConstMappedRange, (WGPUBuffer buffer, size_t offset, size_t size))   \
    X(void *, BufferGetMappedRange, (WGPUBuffer buffer, size_t offset, size_t size))              \
    X(void, BufferUnmap, (WGPUBuffer buffer))                                                     \
    X(void, BufferDestroy, (WGPUBuffer buffer))                                                   \
    X(void, BufferRelease, (WGPUBuffer buffer))                                                   \
    X(WGPUFuture, ShaderModuleGetCompilationInfo,                                                 \
      (WGPUShaderModule shaderModule, WGPUCompilationInfoCallbackInfo callbackInfo))              \
    X(void, ShaderModuleRelease, (WGPUShaderModule shaderModule))                                 \
    X(WGPUBindGroupLayout, ComputePipelineGetBindGroupLayout,                                     \
      (WGPUComputePipeline computePipeline, uint32_t groupIndex))                                 \
    X(void, ComputePipelineRelease, (WGPUComputePipeline computePipeline))                        \
    X(void, BindGroupLayoutRelease, (WGPUBindGroupLayout bindGroupLayout))                        \
    X(void, BindGroupRelease, (WGPUBindGroup bindGroup))                                          \
    X(WGPUComputePassEncoder, CommandEncoderBeginComputePass,                                     \
      (WGPUCommandEncoder commandEncoder, const WGPUComputePassDescriptor *descriptor))           \
    X(void, CommandEncoderCopyBufferToBuffer,                                                     \
      (WGPUCommandEncoder commandEncoder, WGPUBuffer source, uint64_t sourceOffset,               \
       WGPUBuffer destination, uint64_t destinationOffset, uint64_t size))                        \
    X(void, CommandEncoderClearBuffer,                                                            \
      (WGPUCommandEncoder commandEncoder, WGPUBuffer buffer, uint64_t offset, uint64_t size))     \
    X(void, CommandEncoderResolveQuerySet,                                                        \
      (WGPUCommandEncoder commandEncoder, WGPUQuerySet querySet, uint32_t firstQuery,             \
       uint32_t queryCount, WGPUBuffer destination, uint64_t destinationOffset))                  \
    X(WGPUCommandBuffer, CommandEncoderFinish,                                                    \
      (WGPUCommandEncoder commandEncoder, const WGPUCommandBufferDescriptor *descriptor))         \
    X(void, CommandEncoderRelease, (WGPUCommandEncoder commandEncoder))                           \
    X(void, ComputePassEncoderSetPipeline,                                                        \
      (WGPUComputePassEncoder computePassEncoder, WGPUComputePipeline pipeline))                  \
    X(void, ComputePassEncoderSetBindGroup,                                                       \
      (WGPUComputePassEncoder computePassEncoder, uint32_t groupIndex, WGPUBindGroup group,       \
       size_t dynamicOffsetCount, const uint32_t *dynamicOffsets))                                \
    X(void, ComputePassEncoderDispatchWorkgroups,                                                 \
      (WGPUComputePassEncoder computePassEncoder, uint32_t workgroupCountX,                       \
       uint32_t workgroupCountY, uint32_t workgroupCountZ))                                       \
    X(void, ComputePassEncoderEnd, (WGPUComputePassEncoder computePassEncoder))                   \
    X(void, ComputePassEncoderRelease, (WGPUComputePassEncoder computePassEncoder))               \
    X(void, CommandBufferRelease, (WGPUCommandBuffer commandBuffer))                              \
    X(void, QuerySetDestroy, (WGPUQuerySet querySet))                                             \
    X(void, QuerySetRelease, (WGPUQuerySet querySet))

#define PXL_WGPU_DECLARE_FN(ret, name, params) ret(*name) params;
typedef struct pxl_wgpu_fns {
    PXL_WGPU_FUNCTIONS(PXL_WGPU_DECLARE_FN)
} pxl_wgpu_fns;
#undef PXL_WGPU_DECLARE_FN

#endif /* PXL_GPU_WEBGPU_API_H */
