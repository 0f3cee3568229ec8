{{! Every UB buffer of the spec as a pointer of its type into the arena at
    the offset the planner chose: the first thing after args.h in a kernel
    that wants them all in scope from the start. The planner keeps buffers
    apart, hence restrict. }}
{{#ub_buffers}}
{{> ub_buffer.h}}
{{/ub_buffers}}
