"""Container images of the components: builder, pusher and their tests."""
