# Builds the single platform binary into a small image.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/platform ./cmd/platform

FROM gcr.io/distroless/static-debian12:nonroot
# On the image's PATH, so operator commands read as in the docs:
# docker compose exec platform platform network inbox --phone ...
COPY --from=build /out/platform /usr/local/bin/platform
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/platform"]
CMD ["serve"]
