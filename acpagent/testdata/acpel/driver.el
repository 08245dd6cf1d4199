;;; driver.el --- drive an ACP agent through acp.el as agent-shell does -*- lexical-binding: t; -*-

;; joule's own test driver (cmd/joule TestACPEmacsClient), not part of
;; acp.el: it loads the unmodified acp.el (GPL-3.0, kept outside the
;; project) and uses only its public API, the way agent-shell, the Emacs
;; agent panel built on it, does: initialize with the fs capabilities,
;; session/new, prompts whose @-mentions become resource_link blocks,
;; permission requests answered by a policy, fs/read_text_file served from
;; a buffer visiting the file (unsaved edits included) or else the disk,
;; fs/write_text_file applied to the file's buffer and saved, and an
;; interrupt that answers pending permission requests "cancelled" and then
;; sends session/cancel.
;;
;;   emacs --batch -Q -L ACP_EL_DIR -l driver.el
;;
;; Environment: ACPEL_COMMAND (the agent program) and ACPEL_ARGS (a JSON
;; array of its arguments), ACPEL_SCRIPT (the steps, JSON, below) and
;; ACPEL_OUT (where the JSON record of what the client saw is written).
;;
;; Script: {"cwd": DIR, "steps": [STEP...], "load": BOOL}. A STEP has
;; "prompt" (text; "@PATH" is a mention of a workspace file), optionally
;; "permission" ("allow", "reject" or "interrupt": how this step answers
;; permission requests), "interruptOn" (interrupt the turn once the
;; agent's message text holds this) and "visit" ({"path": P, "append":
;; TEXT}: open P in a buffer and append TEXT without saving, before the
;; prompt). With "load", a second client loads the session at the end and
;; records its replay.

(require 'acp)
(require 'cl-lib)
(require 'json)
(require 'map)
(require 'subr-x)

;; The workspace is the agent's tree: no backups, lock or auto-save files.
(setq make-backup-files nil
      create-lockfiles nil
      auto-save-default nil)

(defvar drv-cwd nil)
(defvar drv-step nil "Hash table recording the running step.")
(defvar drv-policy "allow")
(defvar drv-pending nil "Ids of permission requests not answered yet.")
(defvar drv-interrupt-on nil "Interrupt the turn when the agent says this.")
(defvar drv-client nil)
(defvar drv-session nil)
(defvar drv-errors nil)
(defvar drv-start (float-time))

(defun drv-log (fmt &rest args)
  (princ (concat (apply #'format fmt args) "\n") #'external-debugging-output))

(defun drv-push (key value)
  (when drv-step
    (puthash key (cons value (gethash key drv-step)) drv-step)))

(defun drv-append (key text)
  (when (and drv-step text)
    (puthash key (concat (gethash key drv-step "") text) drv-step)))

(defun drv-wait (pred seconds what)
  "Run the event loop until PRED holds or SECONDS pass; nil on time-out."
  (let ((deadline (+ (float-time) seconds)))
    (while (and (not (funcall pred)) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (or (funcall pred)
        (progn (push (format "timed out waiting for %s" what) drv-errors) nil))))

(defun drv-request (client request seconds)
  "Send REQUEST and wait for it: (result . nil) or (nil . error)."
  (let (done result err)
    (acp-send-request
     :client client :request request
     :on-success (lambda (r) (setq result r done t))
     :on-failure (lambda (e &optional _raw) (setq err e done t)))
    (drv-wait (lambda () done) seconds (map-elt request :method))
    (cons result (or err (unless done '((message . "no response")))))))

(defun drv-pick (options kinds)
  (cl-loop for kind in kinds
           thereis (cl-loop for o across options
                            when (equal (map-elt o 'kind) kind)
                            return (map-elt o 'optionId))))

(defun drv-interrupt (client session)
  "What agent-shell's interrupt does: every pending permission request is
answered cancelled, then the turn is cancelled."
  (dolist (id (reverse drv-pending))
    (acp-send-response :client client
                       :response (acp-make-session-request-permission-response
                                  :request-id id :cancelled t))
    (drv-push 'answers "cancelled"))
  (setq drv-pending nil)
  (drv-push 'answers "session/cancel")
  (acp-send-notification :client client
                         :notification (acp-make-session-cancel-notification
                                        :session-id session :reason "User cancelled")))

(defun drv-on-permission (client session id params)
  (let* ((options (map-elt params 'options))
         (option (pcase drv-policy
                   ("allow" (drv-pick options '("allow_once" "allow_always")))
                   ("reject" (drv-pick options '("reject_once" "reject_always"))))))
    (cond
     (option
      (drv-push 'answers option)
      (acp-send-response :client client
                         :response (acp-make-session-request-permission-response
                                    :request-id id :option-id option)))
     ((equal drv-policy "interrupt")
      (push id drv-pending)
      ;; The user presses interrupt a moment after the prompt appears.
      (run-at-time 0.2 nil #'drv-interrupt client session))
     (t
      (drv-push 'answers "cancelled")
      (acp-send-response :client client
                         :response (acp-make-session-request-permission-response
                                    :request-id id :cancelled t))))))

(defun drv-buffer-text (buffer line limit)
  (with-current-buffer buffer
    (save-restriction
      (widen)
      (save-excursion
        (goto-char (point-min))
        (when (and line (> line 1)) (forward-line (1- line)))
        (let ((start (point)))
          (if limit (forward-line limit) (goto-char (point-max)))
          (buffer-substring-no-properties start (point)))))))

(defun drv-on-read (client id params)
  (let* ((path (map-elt params 'path))
         (buffer (find-buffer-visiting path))
         (response
          (condition-case err
              (acp-make-fs-read-text-file-response
               :request-id id
               :content (if buffer
                            (drv-buffer-text buffer (map-elt params 'line) (map-elt params 'limit))
                          (with-temp-buffer
                            (insert-file-contents path)
                            (drv-buffer-text (current-buffer) (map-elt params 'line) (map-elt params 'limit)))))
            (file-missing
             (acp-make-fs-read-text-file-response
              :request-id id
              :error (acp-make-error :code -32002 :message "Resource not found" :data `((path . ,path)))))
            (error
             (acp-make-fs-read-text-file-response
              :request-id id
              :error (acp-make-error :code -32603 :message (error-message-string err)))))))
    (acp-send-response :client client :response response)))

(defun drv-on-write (client id params)
  (let* ((path (map-elt params 'path))
         (content (map-elt params 'content))
         (response
          (condition-case err
              (let ((buffer (or (find-buffer-visiting path) (find-file-noselect path))))
                (make-directory (file-name-directory path) t)
                (with-temp-buffer
                  (insert content)
                  (let ((source (current-buffer)))
                    (with-current-buffer buffer
                      (save-restriction
                        (widen)
                        (replace-buffer-contents source 1.0)
                        (basic-save-buffer)))))
                (acp-make-fs-write-text-file-response :request-id id))
            (error
             (acp-make-fs-write-text-file-response
              :request-id id
              :error (acp-make-error :code -32603 :message (error-message-string err)))))))
    (acp-send-response :client client :response response)))

(defun drv-prompt-blocks (prompt)
  "PROMPT as agent-shell sends it to an agent without embeddedContext:
text, and a resource_link for each @-mention of a readable file."
  (let ((blocks nil) (pos 0))
    (while (string-match "@\\([^[:space:]]+\\)" prompt pos)
      (let* ((start (match-beginning 0)) (end (match-end 0))
             (rel (match-string 1 prompt))
             (abs (expand-file-name rel drv-cwd)))
        (when (> start pos)
          (push `((type . "text") (text . ,(substring prompt pos start))) blocks))
        (push (if (file-readable-p abs)
                  `((type . "resource_link") (uri . ,(concat "file://" abs)) (name . ,rel)
                    (mimeType . "text/plain") (size . ,(file-attribute-size (file-attributes abs))))
                `((type . "text") (text . ,(substring prompt start end))))
              blocks)
        (setq pos end)))
    (when (< pos (length prompt))
      (push `((type . "text") (text . ,(substring prompt pos))) blocks))
    (nreverse blocks)))

(defun drv-make-client (command args)
  (let ((client (acp-make-client :command command :command-params args)))
    (acp-subscribe-to-notifications
     :client client
     :on-notification
     (lambda (n)
       (when (equal (map-elt n 'method) "session/update")
         (let* ((u (map-nested-elt n '(params update)))
                (kind (map-elt u 'sessionUpdate)))
           (drv-push 'updates u)
           (pcase kind
             ("agent_message_chunk"
              (drv-append 'text (map-nested-elt u '(content text)))
              (when (and drv-interrupt-on (string-search drv-interrupt-on (gethash 'text drv-step "")))
                (setq drv-interrupt-on nil)
                (run-at-time 0 nil #'drv-interrupt drv-client drv-session)))
             ("agent_thought_chunk" (drv-append 'thoughts (map-nested-elt u '(content text)))))))))
    client))

(defun drv-serve-requests (client session)
  (acp-subscribe-to-requests
   :client client
   :on-request
   (lambda (req)
     (let ((method (map-elt req 'method)) (id (map-elt req 'id)) (params (map-elt req 'params)))
       (drv-push 'requests req)
       (pcase method
         ("session/request_permission" (drv-on-permission client session id params))
         ("fs/read_text_file" (drv-on-read client id params))
         ("fs/write_text_file" (drv-on-write client id params))
         (_ (acp-send-response
             :client client
             :response `((:request-id . ,id)
                         (:error . ,(acp-make-error :code -32601 :message (format "method not found: %s" method)))))))))))

(defun drv-step-record (step result)
  (let ((h drv-step))
    `((prompt . ,(map-elt step 'prompt))
      (stopReason . ,(map-elt (car result) 'stopReason))
      (meta . ,(map-elt (car result) '_meta))
      (error . ,(cdr result))
      (text . ,(gethash 'text h ""))
      (thoughts . ,(gethash 'thoughts h ""))
      (updates . ,(vconcat (reverse (gethash 'updates h))))
      (requests . ,(vconcat (reverse (gethash 'requests h))))
      (answers . ,(vconcat (reverse (gethash 'answers h)))))))

(defun drv-visit (visit)
  (let ((buffer (find-file-noselect (expand-file-name (map-elt visit 'path) drv-cwd))))
    (with-current-buffer buffer
      (goto-char (point-max))
      (insert (map-elt visit 'append)))))

(defun drv-shutdown (client)
  "Close the agent's stdin and let it exit, as a user closing the shell."
  (let ((proc (map-elt client :process)))
    (when (process-live-p proc)
      (process-send-eof proc)
      (drv-wait (lambda () (not (process-live-p proc))) 20 "the agent to exit")))
  (acp-shutdown :client client))

(defun drv-run ()
  (let* ((json-array-type 'list)
         (json-key-type 'symbol)
         (script (json-read-file (getenv "ACPEL_SCRIPT")))
         (command (getenv "ACPEL_COMMAND"))
         (args (json-read-from-string (getenv "ACPEL_ARGS")))
         (client (drv-make-client command args))
         (out nil) session)
    (setq drv-cwd (map-elt script 'cwd))
    (let ((default-directory (file-name-as-directory drv-cwd)))
      (setq drv-step (make-hash-table))
      (let ((init (drv-request client (acp-make-initialize-request
                                       :protocol-version 1
                                       :client-info '((name . "joule-acp.el-driver") (version . "1"))
                                       :read-text-file-capability t
                                       :write-text-file-capability t)
                               60)))
        (push `(initialize . ,(car init)) out))
      (let ((new (drv-request client (acp-make-session-new-request :cwd drv-cwd) 60)))
        (setq session (map-elt (car new) 'sessionId))
        (push `(sessionId . ,session) out)
        (push `(newSession . ((updates . ,(vconcat (reverse (gethash 'updates drv-step)))))) out))
      (setq drv-client client drv-session session)
      (drv-serve-requests client session)
      ;; available_commands_update follows the session/new response.
      (drv-wait (lambda () (gethash 'updates drv-step)) 10 "available_commands_update")
      (push `(afterNew . ,(vconcat (reverse (gethash 'updates drv-step)))) out)
      (let ((records nil))
        (dolist (step (map-elt script 'steps))
          (setq drv-step (make-hash-table)
                drv-policy (or (map-elt step 'permission) "allow")
                drv-pending nil)
          (drv-log "acp.el %.1fs: %s" (- (float-time) drv-start) (map-elt step 'prompt))
          (when (map-elt step 'visit) (drv-visit (map-elt step 'visit)))
          (setq drv-interrupt-on (map-elt step 'interruptOn))
          (let ((result (drv-request client (acp-make-session-prompt-request
                                             :session-id session
                                             :prompt (drv-prompt-blocks (map-elt step 'prompt)))
                                     180)))
            (push (drv-step-record step result) records)))
        (push `(steps . ,(vconcat (nreverse records))) out))
      ;; Buffers the agent wrote: still unmodified (saved)?
      (push `(unsaved . ,(vconcat (delq nil (mapcar (lambda (b) (and (buffer-file-name b) (buffer-modified-p b)
                                                                  (file-relative-name (buffer-file-name b) drv-cwd)))
                                                    (buffer-list)))))
            out)
      (drv-shutdown client)
      (when (map-elt script 'load)
        (let ((client2 (drv-make-client command args)))
          (setq drv-step (make-hash-table))
          (drv-request client2 (acp-make-initialize-request
                                :protocol-version 1 :read-text-file-capability t :write-text-file-capability t)
                       60)
          (let ((loaded (drv-request client2 (acp-make-session-load-request :session-id session :cwd drv-cwd) 60)))
            (push `(load . ((error . ,(cdr loaded))
                            (text . ,(gethash 'text drv-step ""))
                            (updates . ,(vconcat (reverse (gethash 'updates drv-step))))))
                  out))
          (drv-shutdown client2))))
    (push `(errors . ,(vconcat (reverse drv-errors))) out)
    (let ((coding-system-for-write 'utf-8))
      (with-temp-file (getenv "ACPEL_OUT")
        (insert (json-encode (nreverse out)))))))

(condition-case err
    (drv-run)
  (error
   (drv-log "acp.el driver failed: %S" err)
   (kill-emacs 2)))
(kill-emacs 0)

;;; driver.el ends here
